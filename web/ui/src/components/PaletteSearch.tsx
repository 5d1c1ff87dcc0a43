import { useEffect, useRef } from "react";
import type { NodeTypeInfo } from "../nodetypes";

// matchTypes is the types whose label, name or help has every word of q
// (any case): first those whose label or name starts with q, then those
// whose label or name has it, then the rest, each in the palette's order.
export function matchTypes(types: NodeTypeInfo[], q: string): NodeTypeInfo[] {
  const words = q.toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length) return types;
  const whole = words.join(" ");
  const rank = (t: NodeTypeInfo) => {
    const names = [t.label.toLowerCase(), t.type.toLowerCase()];
    return names.some((n) => n.startsWith(whole)) ? 0 : names.some((n) => n.includes(whole)) ? 1 : 2;
  };
  return types
    .filter((t) => {
      const hay = `${t.label} ${t.type} ${t.help}`.toLowerCase();
      return words.every((w) => hay.includes(w));
    })
    .map((t, i) => ({ t, i, r: rank(t) }))
    .sort((a, b) => a.r - b.r || a.i - b.i)
    .map((x) => x.t);
}

// PaletteSearch filters the palette as one types: Enter adds the first
// match, ↓ moves to the matches, Escape clears; "/" anywhere on the page
// (outside a field) comes here.
export function PaletteSearch({ value, onChange, first, onAdd }: { value: string; onChange: (q: string) => void; first: string | null; onAdd: (type: string) => void }) {
  const ref = useRef<HTMLInputElement>(null);
  useEffect(() => {
    const on = (e: KeyboardEvent) => {
      const t = e.target as HTMLElement | null;
      if (e.key !== "/" || e.ctrlKey || e.metaKey || e.altKey || t?.closest("input, textarea, select, [contenteditable]")) return;
      e.preventDefault();
      ref.current?.focus();
    };
    window.addEventListener("keydown", on);
    return () => window.removeEventListener("keydown", on);
  }, []);
  return (
    <input
      ref={ref}
      type="search"
      className="palette-search"
      placeholder="Search steps  /"
      aria-label="Search steps (Enter adds the first match)"
      aria-keyshortcuts="/"
      data-palette-search
      value={value}
      onChange={(e) => onChange(e.target.value)}
      onKeyDown={(e) => {
        if (e.key === "Enter") {
          e.preventDefault();
          if (first) {
            onAdd(first);
            onChange("");
          }
        } else if (e.key === "Escape" && value) {
          e.preventDefault();
          onChange("");
        } else if (e.key === "ArrowDown") {
          e.preventDefault();
          e.currentTarget.parentElement?.querySelector<HTMLElement>("[data-palette]")?.focus();
        }
      }}
    />
  );
}
