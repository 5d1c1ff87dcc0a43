import { describe, expect, it } from "vitest";
import { nextId, parseDuration, parseSuccessCodes, parseTime, pathBetween, unmarkedCycles, waitSummary } from "./graph";

describe("parseDuration", () => {
  it("reads Go durations", () => {
    expect(parseDuration("48h")).toBe(172800);
    expect(parseDuration("1h30m")).toBe(5400);
    expect(parseDuration("1.5s")).toBe(1.5);
    expect(parseDuration("250ms")).toBe(0.25);
  });
  it("reads ISO-8601 durations", () => {
    expect(parseDuration("P2D")).toBe(172800);
    expect(parseDuration("PT1H30M")).toBe(5400);
    expect(parseDuration("P1W")).toBe(604800);
    expect(parseDuration("PT0,5S")).toBe(0.5);
  });
  it("refuses what is neither", () => {
    for (const bad of ["", "P", "PT", "1x", "h", "48 hours", "1h30"]) expect(parseDuration(bad), bad).toBeNull();
  });
});

describe("parseTime", () => {
  it("tells a time with an offset from one without", () => {
    expect(parseTime("2026-11-29T10:00:00Z")?.offset).toBe(true);
    expect(parseTime("2026-11-29T10:00:00+02:00")?.date.toISOString()).toBe("2026-11-29T08:00:00.000Z");
    expect(parseTime("2026-11-29 10:00")?.offset).toBe(false);
    expect(parseTime("2026-11-29")?.offset).toBe(false);
  });
  it("refuses an expression", () => {
    expect(parseTime("input.at")).toBeNull();
    expect(parseTime("2026-13-45T99:00:00Z")).toBeNull();
  });
});

describe("parseSuccessCodes", () => {
  it("reads codes and classes", () => {
    expect(parseSuccessCodes("200, 201 2xx")).toEqual({ ok: true, value: [200, 201, "2xx"] });
    expect(parseSuccessCodes("")).toEqual({ ok: true, value: [] });
  });
  it("says what is wrong", () => {
    const r = parseSuccessCodes("200, 6xx");
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toContain("6xx");
    expect(parseSuccessCodes("99").ok).toBe(false);
  });
});

describe("cycles", () => {
  const edges = [
    { id: "e1", source: "a", target: "b" },
    { id: "e2", source: "b", target: "c" },
    { id: "e3", source: "c", target: "a" },
    { id: "e4", source: "c", target: "d" },
  ];
  it("finds the shortest path", () => {
    expect(pathBetween({ a: ["b"], b: ["c", "d"], c: ["d"] }, "a", "d")).toEqual(["a", "b", "d"]);
    expect(pathBetween({ a: ["b"] }, "b", "a")).toBeNull();
  });
  it("names every edge of a cycle no loop edge closes, with its path", () => {
    const got = unmarkedCycles(["a", "b", "c", "d"], edges);
    expect([...got.keys()].sort()).toEqual(["e1", "e2", "e3"]);
    expect(got.get("e3")).toEqual(["c", "a", "b", "c"]);
  });
  it("leaves a cycle a loop edge closes alone", () => {
    const loop = edges.map((e) => (e.id === "e3" ? { ...e, data: { loop: { maxIterations: 3 } } } : e));
    expect(unmarkedCycles(["a", "b", "c", "d"], loop).size).toBe(0);
  });
});

describe("ids and summaries", () => {
  it("takes the next free id", () => {
    expect(nextId("step_", new Set(["step_1", "step_2"]))).toBe("step_3");
    expect(nextId("step_", new Set())).toBe("step_1");
  });
  it("says what a Wait waits for", () => {
    expect(waitSummary({ duration: " 1h " })).toBe("for 1h");
    expect(waitSummary({ until: "input.at", timezone: "Europe/Paris" })).toBe("until input.at (Europe/Paris)");
    expect(waitSummary({})).toBeNull();
  });
});
