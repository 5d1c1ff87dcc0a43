import { describe, expect, it } from "vitest";
import { sectionNames } from "./BoardSettings";

describe("sectionNames", () => {
  const before = [
    { id: "new", name: "New" },
    { id: "won", name: "Won" },
  ];
  it("keeps a name being typed when the board is read again", () => {
    expect(sectionNames(before, before, { new: "New", won: "Won deals" })).toEqual({ new: "New", won: "Won deals" });
  });
  it("follows the server where nothing was typed", () => {
    const after = [
      { id: "new", name: "Fresh" },
      { id: "won", name: "Won" },
      { id: "lost", name: "Lost" },
    ];
    expect(sectionNames(after, before, { new: "New", won: "Won" })).toEqual({ new: "Fresh", won: "Won", lost: "Lost" });
  });
  it("shows the saved name once a rename is read back", () => {
    const after = [
      { id: "new", name: "New" },
      { id: "won", name: "Won deals" },
    ];
    expect(sectionNames(after, before, { new: "New", won: "Won deals" })).toEqual({ new: "New", won: "Won deals" });
  });
  it("drops a deleted section", () => {
    expect(sectionNames([before[0]], before, { new: "New", won: "typed" })).toEqual({ new: "New" });
  });
});
