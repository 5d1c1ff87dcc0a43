// DataPanel shows what a step sees — its input and output from the last
// run, its last test or the Test tab's sample — as collapsible trees, and
// what its expressions can reach: run.input, the steps upstream of it
// (steps.<id>.output) and the run variables steps set (vars.<name>).
// Clicking a field inserts its path into the expression field being
// edited, at the cursor ({{ path }} in a template field).
import { useEffect, useState } from "react";
import { exprTarget, insertPath, onExprTarget } from "./exprTarget";
import type { SampleSource } from "./sample";
import { pathOf, type Scope } from "./scope";

const MAX_ITEMS = 20;

function Leaf({ value }: { value: any }) {
  const s = value === undefined ? "" : JSON.stringify(value);
  return <span className="dp-value mono">{s && s.length > 60 ? s.slice(0, 59) + "…" : s}</span>;
}

function Tree({ name, value, path, pick, depth = 0 }: { name: string; value: any; path: (string | number)[]; pick?: (p: string) => void; depth?: number }) {
  const p = pathOf(path);
  const key = pick ? (
    <button type="button" className="linklike mono dp-key" data-path={p} title={`Insert ${p}`} onMouseDown={(e) => e.preventDefault()} onClick={() => pick(p)}>
      {name}
    </button>
  ) : (
    <span className="mono dp-key" data-path={p}>
      {name}
    </span>
  );
  if (value === null || typeof value !== "object")
    return (
      <li>
        {key} <Leaf value={value} />
      </li>
    );
  const entries: [string | number, any][] = Array.isArray(value) ? value.slice(0, MAX_ITEMS).map((v, i) => [i, v]) : Object.entries(value);
  return (
    <li>
      <details open={depth < 2}>
        <summary>
          {key} <span className="muted small">{Array.isArray(value) ? `[${value.length}]` : `{${entries.length}}`}</span>
        </summary>
        <ul className="dp-tree">
          {entries.map(([k, v]) => (
            <Tree key={String(k)} name={typeof k === "number" ? `[${k}]` : k} value={v} path={[...path, k]} pick={pick} depth={depth + 1} />
          ))}
          {Array.isArray(value) && value.length > MAX_ITEMS && <li className="muted small">and {value.length - MAX_ITEMS} more</li>}
        </ul>
      </details>
    </li>
  );
}

const FROM: Record<SampleSource, string> = {
  draft: "from the sample in the Test tab",
  pinned: "from the pinned sample",
  run: "from the flow's last run",
  none: "no run yet: test the step, or write a sample in the Test tab",
};

// onPin pins the sample shown (onUnpin removes the pin): it is saved with
// the flow and preferred over the last run and test.
export function DataPanel({
  scope,
  output,
  from,
  tested,
  condition,
  onPin,
  onUnpin,
}: {
  scope: Scope;
  output: any;
  from: SampleSource;
  tested: boolean;
  condition: boolean;
  onPin?: () => void;
  onUnpin?: () => void;
}) {
  const [editing, setEditing] = useState(!!exprTarget());
  const [note, setNote] = useState<string | null>(null);
  useEffect(() => onExprTarget(() => setEditing(!!exprTarget())), []);
  const pick = (p: string) => {
    if (insertPath(p)) setNote(null);
    else setNote("Click into an expression field first: the path goes where its cursor is.");
  };
  const steps = Object.entries(scope.steps);
  const vars = Object.entries(scope.vars);
  return (
    <details className="data-panel" open data-data-panel>
      <summary>Data</summary>
      <p className="hint">
        {FROM[from]}
        {tested ? "; output from the last test" : ""}. {editing ? "Click a field to insert its path at the cursor." : "Click into an expression field, then a field here to insert its path."}
      </p>
      {(onPin || onUnpin) && (
        <div className="row">
          {from === "pinned" && onUnpin ? (
            <button type="button" className="small" onClick={onUnpin} data-unpin>
              Unpin
            </button>
          ) : (
            from !== "none" &&
            onPin && (
              <button type="button" className="small" onClick={onPin} data-pin title="Keep this sample with the flow: the Test tab and the data panel use it before the last run">
                Pin this input
              </button>
            )
          )}
        </div>
      )}
      {note && (
        <p className="hint" role="status">
          {note}
        </p>
      )}
      <ul className="dp-tree dp-root" aria-label="Input">
        <Tree name="input" value={scope.input} path={["input"]} pick={pick} />
        {condition ? <Tree name="output" value={output ?? null} path={["output"]} pick={pick} /> : output !== undefined && <Tree name="output" value={output} path={["output"]} />}
      </ul>
      <p className="dp-head">Expressions can also reach</p>
      <ul className="dp-tree dp-root" aria-label="Reachable">
        <Tree name="run.input" value={scope.run.input} path={["run", "input"]} pick={pick} />
        {steps.map(([id, s]) => (
          <Tree key={id} name={`steps.${id}.output`} value={s.output} path={["steps", id, "output"]} pick={pick} />
        ))}
        {vars.map(([n, v]) => (
          <Tree key={n} name={`vars.${n}`} value={v} path={["vars", n]} pick={pick} />
        ))}
      </ul>
      {steps.length === 0 && <p className="hint">No step runs before this one.</p>}
    </details>
  );
}
