import { describe, expect, it } from "vitest";
import { BUILTINS, complete, SCRIPT_GLOBALS } from "./scope";

describe("complete", () => {
  const scope = { input: { amount: 5 }, vars: {}, steps: {}, run: { input: {} } } as any;
  const labels = (r: ReturnType<typeof complete>) => (r ? r.options.map((o) => o.label) : []);

  it("offers expr-lang's builtins in an expression", () => {
    const got = labels(complete("a", scope));
    expect(got).toContain("abs");
    expect(got).toContain("input");
  });

  it("offers JavaScript's names, not expr-lang's builtins, in a script", () => {
    const got = labels(complete("a", scope, SCRIPT_GLOBALS));
    for (const b of ["abs", "all", "any", "len"]) expect(got).not.toContain(b);
    expect(got).toContain("Math");
    expect(got).toContain("input");
    expect(BUILTINS).toContain("abs");
  });

  it("offers a value's fields after a dot, either way", () => {
    expect(labels(complete("input.", scope, SCRIPT_GLOBALS))).toEqual(["amount"]);
  });
});
