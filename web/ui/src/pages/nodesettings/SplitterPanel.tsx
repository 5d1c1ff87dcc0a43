// The settings of a Splitter node (the array whose items run in parallel,
// and how many of them at once) and of a Collector (how many of the items
// may fail).
import { toleranceProblem } from "../../graph";
import { Field, num, put, ServerProblems, type PanelProps } from "./shared";

export const SPLITTER_FIELDS = ["arrayPath", "maxConcurrency"];
export const COLLECTOR_FIELDS = ["toleratedFailures"];

export function SplitterPanel({ node, data, set, problemsAt }: PanelProps) {
  const limit = data.maxConcurrency;
  const badLimit = limit !== undefined && !(Number.isInteger(limit) && limit >= 1);
  return (
    <>
      <Field label="Array path" id="node-array" hint="A gjson path into the input, e.g. contacts or lead.contacts. One parallel path per item.">
        <input
          id="node-array"
          className="mono"
          value={data.arrayPath ?? ""}
          aria-invalid={problemsAt("arrayPath").some((p) => !p.stale)}
          onChange={(e) => set(["arrayPath"])(e.target.value)}
        />
      </Field>
      <ServerProblems problems={problemsAt("arrayPath")} id={node.id} />
      <Field
        label="At most at once (optional)"
        id="node-max-concurrency"
        hint="How many items run at the same time; the others wait for a place. Empty: all of them at once."
        error={badLimit ? "A whole number of at least 1, or empty for all at once." : null}
      >
        <input
          id="node-max-concurrency"
          type="number"
          min={1}
          step={1}
          value={typeof limit === "number" ? limit : ""}
          aria-invalid={badLimit || problemsAt("maxConcurrency").some((p) => !p.stale)}
          onChange={(e) => set(["maxConcurrency"])(num(e.target.value))}
        />
      </Field>
      <ServerProblems problems={problemsAt("maxConcurrency")} id={node.id} />
    </>
  );
}

export function CollectorPanel({ node, data, onChange, problemsAt }: PanelProps) {
  const v = data.toleratedFailures;
  const text = v === undefined || v === null ? "" : String(v);
  const local = toleranceProblem(v);
  return (
    <>
      <Field
        label="Failures tolerated (optional)"
        id="node-tolerated"
        hint="How many items may fail and the Collector still fires with the others: a count (3) or a percent of the items (5%). Empty: one failed item fails the Collector."
        error={local}
      >
        <input
          id="node-tolerated"
          className="mono"
          placeholder="0"
          value={text}
          aria-invalid={!!local || problemsAt("toleratedFailures").some((p) => !p.stale)}
          onChange={(e) => {
            const s = e.target.value.trim();
            // A whole number is a count (saved as a number); anything else
            // (5%) is kept as typed for the server to read.
            onChange(put(data, "toleratedFailures", s === "" ? undefined : /^\d+$/.test(s) ? Number(s) : e.target.value));
          }}
        />
      </Field>
      <ServerProblems problems={problemsAt("toleratedFailures")} id={node.id} />
    </>
  );
}
