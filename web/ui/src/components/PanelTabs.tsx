import type { KeyboardEvent } from "react";

export type PanelTab = "settings" | "json" | "test";

const TABS: { id: PanelTab; label: string }[] = [
  { id: "settings", label: "Settings" },
  { id: "json", label: "JSON" },
  { id: "test", label: "Test" },
];

// PanelTabs switches a node's panel between its settings form, its data
// as JSON and trying it alone; ← and → move between the tabs.
export function PanelTabs({ tab, onTab }: { tab: PanelTab; onTab: (t: PanelTab) => void }) {
  const key = (e: KeyboardEvent<HTMLButtonElement>) => {
    if (e.key !== "ArrowLeft" && e.key !== "ArrowRight") return;
    e.preventDefault();
    const i = TABS.findIndex((t) => t.id === tab);
    const next = TABS[(i + (e.key === "ArrowRight" ? 1 : TABS.length - 1)) % TABS.length];
    onTab(next.id);
    e.currentTarget.parentElement?.querySelector<HTMLElement>(`[data-tab="${next.id}"]`)?.focus();
  };
  return (
    <div className="panel-tabs" role="tablist" aria-label="Node panel">
      {TABS.map((t) => (
        <button
          key={t.id}
          type="button"
          role="tab"
          data-tab={t.id}
          aria-selected={tab === t.id}
          tabIndex={tab === t.id ? 0 : -1}
          onClick={() => onTab(t.id)}
          onKeyDown={key}
        >
          {t.label}
        </button>
      ))}
    </div>
  );
}
