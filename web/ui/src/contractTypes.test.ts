/// <reference types="vite/client" />
import { describe, expect, it } from "vitest";
import source from "./api.ts?raw";

// The UI's contract types are openapi.yaml's (api.gen.ts): api.ts names
// them, and a type written out by hand there would drift from the spec
// unseen. Each exported type must be read off the generated ones (or off
// another exported type that is), unless it is the UI's own.
const uiOwn = new Set(["Ability"]);

describe("api.ts", () => {
  it("writes out no contract type by hand", () => {
    expect(source).not.toMatch(/\binterface\s+\w+/);
    const defs = [...source.matchAll(/^export type (\w+)(?:<[^=]*>)? = ([\s\S]*?);$/gm)].map((m) => ({ name: m[1], rhs: m[2] }));
    expect(defs.length).toBeGreaterThan(40);
    const derived = new Set<string>();
    for (const { name, rhs } of defs) {
      if (uiOwn.has(name)) continue;
      const fromGenerated = /\bSchemas\[|\bAnswer<|\bMeAnswer\b/.test(rhs) || [...derived].some((d) => new RegExp(`\\b${d}\\b`).test(rhs));
      expect(fromGenerated, `${name} = ${rhs}`).toBe(true);
      expect(rhs.trimStart().startsWith("{"), `${name} is an object type written out`).toBe(false);
      derived.add(name);
    }
  });
});
