import { describe, expect, it } from "vitest";
import type { OutputUnit } from "@cfworker/json-schema";
import { at, formValidator, message } from "./validator";

const schema = { type: "object", properties: { code: { type: "string", pattern: "^[A-Z]{3}$" } } } as const;

describe("validator messages", () => {
  it("reads the pattern a value misses from the schema", () => {
    const e: OutputUnit = { keyword: "pattern", keywordLocation: "#/properties/code/pattern", instanceLocation: "#/code", error: "String does not match pattern." };
    expect(message(e, schema)).toBe("must match the pattern ^[A-Z]{3}$");
  });
  it("says something in words when the pattern cannot be found", () => {
    const e: OutputUnit = { keyword: "pattern", keywordLocation: "#/$ref/pattern", instanceLocation: "#/code", error: "String does not match pattern." };
    expect(message(e, schema)).toBe("is not in the expected form");
  });
  it("resolves JSON pointers in the schema", () => {
    expect(at(schema, "#/properties/code/pattern")).toBe("^[A-Z]{3}$");
    expect(at(schema, "#/properties/nope")).toBeUndefined();
    expect(at({ "a/b": { "~": 1 } }, "#/a~1b/~0")).toBe(1);
  });
  it("gives the field's message through the form's validator", () => {
    const r = formValidator.validateFormData({ code: "ab" }, schema as any);
    expect(r.errors.map((e) => [e.property, e.message])).toEqual([[".code", "must match the pattern ^[A-Z]{3}$"]]);
  });
});
