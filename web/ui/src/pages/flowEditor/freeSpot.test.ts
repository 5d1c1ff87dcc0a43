import { describe, expect, it } from "vitest";
import { NODE_MAX, type CanvasNode } from "../../graph";
import { freeSpot } from "./freeSpot";

const node = (id: string, x: number, y: number, width = 160, height = 60): CanvasNode => ({ id, position: { x, y }, data: {}, measured: { width, height } });
const lo = { x: -1000, y: -1000 };
const hi = { x: 1000, y: 1000 };

describe("freeSpot", () => {
  it("keeps the room a node can grow to, not its size now", () => {
    const at = freeSpot({ x: 80, y: 30 }, [node("a", 0, 0)], lo, hi);
    const box = { x: at.x - 80, y: at.y - 30 };
    // Apart from a's largest box, with the new node at its largest.
    const apart = box.x >= NODE_MAX.width || box.x + NODE_MAX.width <= 0 || box.y >= NODE_MAX.height || box.y + NODE_MAX.height <= 0;
    expect(apart).toBe(true);
  });
  it("answers the wanted place when it is free", () => {
    expect(freeSpot({ x: 80, y: 30 }, [], lo, hi)).toEqual({ x: 80, y: 30, inPane: true });
  });
  it("goes beyond a full pane, on top of no node, rather than on the wanted place", () => {
    // A pane with room for one node, taken.
    const small = { lo: { x: 0, y: 0 }, hi: { x: NODE_MAX.width + 10, y: NODE_MAX.height + 10 } };
    const at = freeSpot({ x: 80, y: 30 }, [node("a", 0, 0)], small.lo, small.hi);
    expect(at.inPane).toBe(false);
    const box = { x: at.x - 80, y: at.y - 30 };
    expect(box.x >= NODE_MAX.width || box.x + NODE_MAX.width <= 0 || box.y >= NODE_MAX.height || box.y + NODE_MAX.height <= 0).toBe(true);
  });
});
