import { describe, expect, it } from "vitest";
import { runEnd } from "./RunBanners";

describe("runEnd", () => {
  it("says a cancelled run was cancelled, not that it failed", () => {
    expect(runEnd("cancelled", "cancelled")).toEqual({ failed: false, text: "Run cancelled." });
    expect(runEnd("cancelled", "undo step refund failed")).toEqual({ failed: false, text: "Run cancelled: undo step refund failed" });
  });
  it("says why a run failed", () => {
    expect(runEnd("failed", "node work failed: boom")).toEqual({ failed: true, text: "Run failed: node work failed: boom" });
    expect(runEnd("failed", "deadline")).toEqual({ failed: true, text: "Run failed: its deadline passed" });
  });
  it("says a run going again had an error", () => {
    expect(runEnd("running", "node work failed: boom")).toEqual({ failed: false, text: "Last error: node work failed: boom" });
  });
});
