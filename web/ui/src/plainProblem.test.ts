import { describe, expect, it } from "vitest";
import { plainProblem } from "./plainProblem";

describe("plainProblem", () => {
  it("words a validator's message for a person", () => {
    expect(plainProblem("maxLength: got 12, want 10")).toBe("At most 10 characters (this has 12).");
    expect(plainProblem("minItems: got 0, want 1")).toBe("At least 1 items (this has 0).");
    expect(plainProblem(`invalid character '}' looking for beginning of value`)).toBe(
      "This is not valid JSON: check quotes, commas and brackets.",
    );
  });
  it("reads only the first line", () => {
    expect(plainProblem("maxItems: got 3, want 2\nat /items")).toBe("At most 2 items (this has 3).");
  });
  it("answers null for what it does not know", () => {
    expect(plainProblem("something else went wrong")).toBeNull();
  });
});
