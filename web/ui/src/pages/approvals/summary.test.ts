import { describe, expect, it } from "vitest";
import { labelledValues, summaryText } from "./ApprovalCard";

describe("summaryText", () => {
  it("keeps text, numbers and booleans as they are", () => {
    expect(summaryText("ada@example.com")).toBe("ada@example.com");
    expect(summaryText(1200)).toBe("1200");
    expect(summaryText(true)).toBe("true");
    expect(summaryText(null)).toBe("—");
  });

  it("says lists and objects in words, not JSON", () => {
    expect(summaryText([{ sku: "a" }, { sku: "b", qty: 2 }])).toBe("Sku: a; Sku: b, Qty: 2");
    expect(summaryText(["red", "blue"])).toBe("red, blue");
    expect(summaryText([])).toBe("none");
    expect(summaryText({ city: "Lyon", zip: "69001" })).toBe("City: Lyon; Zip: 69001");
    expect(summaryText([{ sku: "a" }])).not.toContain("{");
  });

  it("is bounded", () => {
    expect(summaryText(Array.from({ length: 500 }, (_, i) => `item${i}`)).length).toBeLessThanOrEqual(300);
  });

  it("lays an input out with a nested list in words", () => {
    const items = labelledValues({ order: { item: "Laptop", lines: [{ sku: "a" }, { sku: "b" }] } });
    expect(items.map((i) => [i.label, summaryText(i.value)])).toEqual([
      ["Order › Item", "Laptop"],
      ["Order › Lines", "Sku: a; Sku: b"],
    ]);
  });
});
