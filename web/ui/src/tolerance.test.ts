import { describe, expect, it } from "vitest";
import { toleranceProblem } from "./graph";

describe("toleranceProblem", () => {
  it("takes what the server takes", () => {
    for (const v of [undefined, null, 0, 3, "5%", " 2.5 % ", "0%", "100%"]) expect(toleranceProblem(v)).toBeNull();
  });
  it("says what is wrong with the rest", () => {
    expect(toleranceProblem(-1)).toMatch(/whole number/);
    expect(toleranceProblem(1.5)).toMatch(/whole number/);
    expect(toleranceProblem("-2")).toMatch(/whole number/);
    expect(toleranceProblem("150%")).toMatch(/0% to 100%/);
    expect(toleranceProblem("%")).toMatch(/0% to 100%/);
    expect(toleranceProblem("five")).toMatch(/count of items/);
    expect(toleranceProblem(true)).toMatch(/count of items/);
  });
});
