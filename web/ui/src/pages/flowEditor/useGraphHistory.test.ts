import { describe, expect, it } from "vitest";
import { BURST_MS, History, MAX_STEPS, snapshot, type Snap } from "./useGraphHistory";

const g = (label: string, x = 0): Snap => snapshot([{ id: "a", type: "Transform", position: { x, y: 0 }, data: { label } }], []);

describe("History", () => {
  it("takes back each change and makes it again", () => {
    const h = new History();
    h.seen(g("one"), 0);
    h.seen(g("two"), 10_000);
    h.seen(g("three"), 20_000);
    expect(h.undo()).toEqual(g("two"));
    h.seen(g("two"), 20_001); // the canvas shows it: not a change
    expect(h.undo()).toEqual(g("one"));
    h.seen(g("one"), 20_002);
    expect(h.canUndo()).toBe(false);
    expect(h.redo()).toEqual(g("two"));
    h.seen(g("two"), 20_003);
    expect(h.redo()).toEqual(g("three"));
    expect(h.canRedo()).toBe(false);
  });
  it("makes the first change a step however soon it comes", () => {
    const h = new History();
    h.seen(g("loaded"), 1000);
    h.seen(g("changed"), 1001);
    expect(h.undo()).toEqual(g("loaded"));
  });
  it("makes a burst of changes one step", () => {
    const h = new History();
    h.seen(g(""), 0);
    for (let i = 1; i <= 5; i++) h.seen(g("label".slice(0, i)), 10_000 + i * (BURST_MS / 2));
    expect(h.undo()).toEqual(g(""));
    expect(h.canUndo()).toBe(false);
  });
  it("forgets what was taken back once a new change is made", () => {
    const h = new History();
    h.seen(g("one"), 0);
    h.seen(g("two"), 10_000);
    h.undo();
    h.seen(g("one"), 10_001);
    h.seen(g("other"), 20_000);
    expect(h.canRedo()).toBe(false);
    expect(h.undo()).toEqual(g("one"));
  });
  it("ignores what only the canvas knows: selection, measured size", () => {
    const h = new History();
    const n = { id: "a", type: "Transform", position: { x: 0, y: 0 }, data: {} };
    h.seen(snapshot([n], []), 0);
    h.seen(snapshot([{ ...n, selected: true, measured: { width: 160, height: 50 } }], []), 10_000);
    expect(h.canUndo()).toBe(false);
  });
  it("keeps at most MAX_STEPS steps and forgets all on reset", () => {
    const h = new History();
    for (let i = 0; i <= MAX_STEPS + 10; i++) h.seen(g(String(i)), i * 10_000);
    let n = 0;
    while (h.undo()) n++;
    expect(n).toBe(MAX_STEPS);
    h.reset();
    h.seen(g("x"), 0);
    expect(h.canUndo()).toBe(false);
  });
});
