import type { Edge } from "@xyflow/react";
import { DEFAULT_OUTCOMES, edgeKind, outcomesOf } from "../../graph";

// OutcomesEditor edits a UX node's outcomes: one button each in the
// approvals inbox; an edge with that outcome is taken when a person picks it.
export function OutcomesEditor({
  nodeId,
  data,
  outgoing,
  onChange,
}: {
  nodeId: string;
  data: Record<string, any>;
  outgoing: Edge[];
  onChange: (next: string[], rename?: [string, string]) => void;
}) {
  const list: string[] = Array.isArray(data.outcomes) ? data.outcomes.map((x: unknown) => String(x ?? "")) : DEFAULT_OUTCOMES;
  const named = list.map((o) => o.trim());
  const dupes = new Set(named.filter((o, i) => o && named.indexOf(o) !== i));
  const used = new Set(outgoing.filter((e) => edgeKind(e.data) === "outcome").map((e) => String((e.data as any).outcome)));
  const effective = outcomesOf({ outcomes: list });
  const unknown = outgoing.filter((e) => edgeKind(e.data) === "outcome" && !effective.includes(String((e.data as any).outcome)));
  // The first outcome completes the step even without an edge of its own
  // (taking the plain edges); any other without an edge fails it.
  const without = effective.slice(1).filter((o) => !used.has(o));
  return (
    <fieldset className="outcomes" aria-label={`Outcomes of ${nodeId}`}>
      <legend>Outcomes</legend>
      <p className="muted small">One button each in the approvals inbox. An edge set to an outcome is taken when a person chooses it.</p>
      {list.map((o, i) => (
        <div className="row" key={i}>
          <label className="sr-only" htmlFor={`outcome-${i}`}>
            Outcome {i + 1}
          </label>
          <input
            id={`outcome-${i}`}
            className="mono"
            placeholder="e.g. approve"
            maxLength={64}
            value={o}
            aria-invalid={!o.trim() || dupes.has(o.trim())}
            onChange={(e) => {
              const v = e.target.value;
              const next = list.map((x, j) => (j === i ? v : x));
              const renamed = o.trim() && v.trim() && o.trim() !== v.trim() && !dupes.has(o.trim());
              onChange(next, renamed ? [o.trim(), v.trim()] : undefined);
            }}
          />
          <button
            type="button"
            className="btn ghost small"
            aria-label={`Remove outcome ${o || i + 1}`}
            disabled={list.length <= 1}
            onClick={() => onChange(list.filter((_, j) => j !== i))}
          >
            ×
          </button>
        </div>
      ))}
      <button type="button" className="btn small" onClick={() => onChange([...list, ""])}>
        Add outcome
      </button>
      {named.some((o) => !o) && (
        <p className="field-error" role="alert">
          Name every outcome (an empty one is left out when you save).
        </p>
      )}
      {dupes.size > 0 && (
        <p className="field-error" role="alert">
          Each outcome needs its own name: {[...dupes].join(", ")} is there twice.
        </p>
      )}
      {unknown.map((e) => (
        <p key={e.id} className="field-error" role="alert">
          Edge {e.id} → {e.target} is taken on “{String((e.data as any).outcome)}”, which this step does not offer.
        </p>
      ))}
      {without.length > 0 && (
        <p className="hint">
          No edge for {without.map((o) => `“${o}”`).join(", ")}: choosing {without.length === 1 ? "it" : "one of them"} fails this step
          {outgoing.some((e) => edgeKind(e.data) === "failure") ? " (its failure edge is taken)" : ""}.
        </p>
      )}
    </fieldset>
  );
}
