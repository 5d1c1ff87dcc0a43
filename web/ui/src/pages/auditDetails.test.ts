import { describe, expect, it } from "vitest";
import { auditDetails } from "./auditDetails";

describe("auditDetails", () => {
  it("says nothing for no details", () => {
    expect(auditDetails(null)).toEqual([]);
    expect(auditDetails({})).toEqual([]);
  });

  it("labels the keys the server writes, the step first", () => {
    expect(auditDetails({ token_id: "tok-1", key: "approve" })).toEqual([
      { label: "Step", value: "approve" },
      { label: "Token", value: "tok-1" },
    ]);
  });

  it("lists a user change's fields in words", () => {
    expect(auditDetails({ changed: { role: true, name: true, password: true } })).toEqual([{ label: "Changed", value: "role, name, password" }]);
  });

  it("says a reassignment's people and skips what is empty", () => {
    expect(auditDetails({ users: ["ann@example.com", "bo@example.com"], groups: [], comment: "" })).toEqual([
      { label: "People", value: "ann@example.com, bo@example.com" },
    ]);
  });

  it("says how a sign-in came", () => {
    expect(auditDetails({ via: "oidc", address: "10.0.0.1" })).toEqual([
      { label: "Signed in with", value: "single sign-on" },
      { label: "From address", value: "10.0.0.1" },
    ]);
  });

  it("words unknown keys and nested values", () => {
    expect(auditDetails({ cancelled_runs: 3, some_flag: true, limits: { max_items: 5 } })).toEqual([
      { label: "Runs cancelled", value: "3" },
      { label: "Limits", value: "max items: 5" },
      { label: "Some flag", value: "yes" },
    ]);
  });

  it("says an escalation's wait in hours", () => {
    expect(auditDetails({ after_seconds: 7200 })).toEqual([{ label: "After", value: "2 h" }]);
  });
});
