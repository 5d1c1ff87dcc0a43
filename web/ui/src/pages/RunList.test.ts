import { describe, expect, it } from "vitest";
import { readPages } from "./RunList";

// pagesOf serves a list of ids two at a time, as the API pages runs.
function pagesOf(ids: string[]) {
  const asked: (string | null)[] = [];
  const get = async (cursor: string | null) => {
    asked.push(cursor);
    const at = cursor ? Number(cursor) : 0;
    const next = at + 2 < ids.length ? String(at + 2) : null;
    return { runs: ids.slice(at, at + 2).map((id) => ({ id })), next_cursor: next };
  };
  return { get, asked };
}

describe("readPages", () => {
  it("reads as many pages as the list shows, with the cursor after the last", async () => {
    const { get, asked } = pagesOf(["a", "b", "c", "d", "e"]);
    expect(await readPages(get, 2)).toEqual({ runs: [{ id: "a" }, { id: "b" }, { id: "c" }, { id: "d" }], next_cursor: "4" });
    expect(asked).toEqual([null, "2"]);
  });
  it("stops at the last page", async () => {
    const { get, asked } = pagesOf(["a", "b", "c"]);
    expect(await readPages(get, 5)).toEqual({ runs: [{ id: "a" }, { id: "b" }, { id: "c" }], next_cursor: null });
    expect(asked).toEqual([null, "2"]);
  });
  it("reads one page at least", async () => {
    const { get } = pagesOf(["a", "b", "c"]);
    expect(await readPages(get, 0)).toEqual({ runs: [{ id: "a" }, { id: "b" }], next_cursor: "2" });
  });
});
