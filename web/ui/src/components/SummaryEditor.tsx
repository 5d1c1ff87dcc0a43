// SummaryEditor edits a UX step's data.summary: the labelled values the
// person deciding sees first on the task's card. Each value is picked from
// the data panel — the step's input, run.input, an upstream step's output
// (steps.<id>.output) or a run variable (vars.<name>) — and labelled.
import { useEffect, useRef, useState } from "react";
import { setExprTarget, type ExprTarget } from "./exprTarget";

type Row = { label: string; path: string };

// rowsOf reads data.summary: gjson paths, each a string or {label, path}.
function rowsOf(summary: unknown): Row[] {
  if (!Array.isArray(summary)) return [];
  return summary
    .map((it) => (typeof it === "string" ? { label: "", path: it } : it && typeof it === "object" ? { label: String((it as any).label ?? ""), path: String((it as any).path ?? "") } : null))
    .filter((r): r is Row => !!r);
}

// gjsonPath turns a path as the data panel writes it (a.b, a["x-y"], a[0])
// into the gjson path a summary holds (a.b, a.x-y, a.0).
export function gjsonPath(p: string): string {
  const esc = (s: string) => s.replace(/[\\.*?|#@!=<>%]/g, (c) => `\\${c}`);
  const parts: string[] = [];
  const re = /([A-Za-z_$][\w$]*)|\[(\d+)\]|\["((?:[^"\\]|\\.)*)"\]/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(p))) {
    if (m[1] !== undefined) parts.push(esc(m[1]));
    else if (m[2] !== undefined) parts.push(m[2]);
    else parts.push(esc(JSON.parse(`"${m[3]}"`)));
  }
  return parts.length ? parts.join(".") : p;
}

// labelFor guesses a label from a path's last field: "cost_center" →
// "Cost center".
function labelFor(path: string): string {
  const last = path.split(/(?<!\\)\./).pop() ?? path;
  const w = last
    .replace(/\\/g, "")
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/[_-]+/g, " ")
    .trim()
    .toLowerCase();
  return /^\d+$/.test(w) || !w ? path : w[0].toUpperCase() + w.slice(1);
}

export function SummaryEditor({ summary, onChange }: { summary: unknown; onChange: (next: Row[] | undefined) => void }) {
  const [rows, setRows] = useState<Row[]>(() => rowsOf(summary));
  // picking: the row the next click in the data panel fills.
  const [picking, setPicking] = useState<number | null>(null);
  const rowsRef = useRef(rows);
  rowsRef.current = rows;
  const commit = (next: Row[]) => {
    setRows(next);
    const kept = next.filter((r) => r.path.trim()).map((r) => ({ label: r.label.trim(), path: r.path.trim() }));
    onChange(kept.length ? kept : undefined);
  };
  // While a row is picking, a click in the data panel fills its path (and
  // its label, when it has none).
  const target = useRef<ExprTarget>({ insert: () => {} });
  target.current.insert = (text: string) => {
    const i = pickingRef.current;
    if (i === null) return;
    const path = gjsonPath(text);
    const next = rowsRef.current.map((r, j) => (j === i ? { path, label: r.label || labelFor(path) } : r));
    commit(next);
  };
  const pickingRef = useRef(picking);
  pickingRef.current = picking;
  useEffect(() => () => setExprTarget(null), []);
  const pick = (i: number) => {
    setPicking(i);
    setExprTarget(target.current);
  };
  return (
    <fieldset className="summary-editor" data-summary-editor>
      <legend>Summary shown to the approver</legend>
      <p className="hint">
        The values the person decides by, first on the task&apos;s card. Add a value, then click a field in the Data panel below (the step&apos;s input, run.input, an earlier
        step&apos;s output or a variable) and label it. Without a summary the card shows the run&apos;s input.
      </p>
      {rows.length > 0 && (
        <ol className="summary-rows">
          {rows.map((r, i) => (
            <li key={i} className={picking === i ? "picking" : ""} data-summary-row={i}>
              <label htmlFor={`summary-label-${i}`} className="sr-only">
                Label {i + 1}
              </label>
              <input
                id={`summary-label-${i}`}
                data-field="label"
                placeholder="Label, e.g. Requester"
                value={r.label}
                onChange={(e) => commit(rows.map((x, j) => (j === i ? { ...x, label: e.target.value } : x)))}
              />
              <label htmlFor={`summary-path-${i}`} className="sr-only">
                Path {i + 1}
              </label>
              <input
                id={`summary-path-${i}`}
                data-field="path"
                className="mono"
                placeholder="click a field in Data"
                value={r.path}
                onFocus={() => pick(i)}
                onChange={(e) => commit(rows.map((x, j) => (j === i ? { ...x, path: e.target.value } : x)))}
              />
              <button type="button" className="btn small ghost" aria-label={`Remove ${r.label || r.path || "this value"}`} onClick={() => commit(rows.filter((_, j) => j !== i))}>
                ✕
              </button>
            </li>
          ))}
        </ol>
      )}
      <button
        type="button"
        className="btn small"
        data-action="add-summary"
        onClick={() => {
          const next = [...rows, { label: "", path: "" }];
          setRows(next);
          pick(next.length - 1);
          requestAnimationFrame(() => document.getElementById(`summary-path-${next.length - 1}`)?.focus());
        }}
      >
        + Add a value
      </button>
      {picking !== null && rows[picking] && !rows[picking].path && (
        <p className="hint" role="status" data-picking>
          Now click a field in the Data panel below.
        </p>
      )}
    </fieldset>
  );
}
