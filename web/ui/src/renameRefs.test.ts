import { describe, expect, it } from "vitest";
import { renameInString, renameStepRefs } from "./renameRefs";

describe("renameInString", () => {
  it("renames the dot form and leaves longer names and members alone", () => {
    expect(renameInString("steps.fetch.output.id + steps.fetch2.output + x.steps.fetch", "fetch", "load")).toEqual({
      text: "steps.load.output.id + steps.fetch2.output + x.steps.fetch",
      count: 1,
    });
  });
  it("renames templates, optional chains and brackets in their quotes", () => {
    expect(renameInString(`{{ steps.fetch.output.id }} {{ steps?.fetch }} {{ steps["fetch"] }} {{ steps[ 'fetch' ].output }}`, "fetch", "load")).toEqual({
      text: `{{ steps.load.output.id }} {{ steps?.load }} {{ steps["load"] }} {{ steps[ 'load' ].output }}`,
      count: 4,
    });
  });
  it("writes a new id that is no identifier in brackets", () => {
    expect(renameInString("steps.fetch.output > 1 && steps?.fetch", "fetch", "fetch-2")).toEqual({
      text: `steps["fetch-2"].output > 1 && steps?.["fetch-2"]`,
      count: 2,
    });
  });
  it("reads an old id with a dash only in brackets", () => {
    // steps.fetch-2 is steps.fetch minus 2.
    expect(renameInString(`steps["fetch-2"].output + steps.fetch-2`, "fetch-2", "load")).toEqual({
      text: `steps["load"].output + steps.fetch-2`,
      count: 1,
    });
  });
  it("takes the old id literally, not as a pattern", () => {
    expect(renameInString(`steps["a.b"] + steps["axb"]`, "a.b", "c")).toEqual({ text: `steps["c"] + steps["axb"]`, count: 1 });
  });
});

describe("renameStepRefs", () => {
  it("rewrites every string in nested data and counts them", () => {
    const data = {
      mapping: { total: "steps.req.output.amount", items: ["steps.req.output.items", "input.x"] },
      url: "https://x/{{ steps.req.output.id }}",
      retries: 3,
      _pinned: { input: { note: "steps.req" }, steps: { req: { output: { amount: 3 } }, other: {} } },
    };
    const r = renameStepRefs(data, "req", "request");
    expect(r.count).toBe(3);
    expect(r.value).toEqual({
      mapping: { total: "steps.request.output.amount", items: ["steps.request.output.items", "input.x"] },
      url: "https://x/{{ steps.request.output.id }}",
      retries: 3,
      _pinned: { input: { note: "steps.req" }, steps: { request: { output: { amount: 3 } }, other: {} } },
    });
    expect(data.mapping.total).toBe("steps.req.output.amount");
  });
  it("hands back the same object when nothing names the step", () => {
    const data = { mapping: { a: "steps.other.output" }, n: [1, 2] };
    const r = renameStepRefs(data, "req", "request");
    expect(r.count).toBe(0);
    expect(r.value).toBe(data);
  });
});

describe("renameInString, the review's cases", () => {
  it("reads only inside the braces of a template", () => {
    expect(renameInString("Check steps.fetch: {{ steps.fetch.output.id }}", "fetch", "load")).toEqual({
      text: "Check steps.fetch: {{ steps.load.output.id }}",
      count: 1,
    });
  });
  it("renames a backquoted key (a Code script's)", () => {
    expect(renameInString("return steps[`fetch`].output", "fetch", "load")).toEqual({ text: "return steps[`load`].output", count: 1 });
  });
  it("writes a new id that is one of expr's words in brackets", () => {
    expect(renameInString("steps.fetch.output", "fetch", "in")).toEqual({ text: `steps["in"].output`, count: 1 });
  });
});
