import { useEffect, useState } from "react";

// nodeJSON is a node's data as saved: without the canvas' own keys
// (those starting with "_").
function nodeJSON(data: Record<string, any>): string {
  return JSON.stringify(Object.fromEntries(Object.entries(data).filter(([k]) => !k.startsWith("_"))), null, 2);
}

// JsonTab shows a node's data as JSON to edit: every setting, also those
// the panel has no field for (a UX step's summary or remindAfterSeconds, an entity
// movement's setMetadata). Apply replaces the node's data with the JSON
// when it is a valid object; otherwise it says why and changes nothing.
// onPending is told whether text typed here waits to be applied: the
// editor counts it as unsaved work, and Save refuses until it is applied
// or reset.
export function JsonTab({
  nodeId,
  data,
  onApply,
  onPending,
}: {
  nodeId: string;
  data: Record<string, any>;
  onApply: (data: Record<string, any>) => void;
  onPending?: (pending: boolean) => void;
}) {
  const shown = nodeJSON(data);
  const [draft, setDraft] = useState(shown);
  const [error, setError] = useState<string | null>(null);
  // The node changed elsewhere (the Settings tab, an undo): show it.
  useEffect(() => {
    setDraft(shown);
    setError(null);
  }, [shown]);
  const pending = draft !== shown;
  useEffect(() => {
    onPending?.(pending);
  }, [pending, onPending]);
  // Gone (another tab, another node): nothing waits here any more.
  useEffect(() => () => onPending?.(false), [onPending]);
  const apply = () => {
    let v: unknown;
    try {
      v = JSON.parse(draft);
    } catch (err) {
      return setError(`Not valid JSON: ${(err as Error).message}. Nothing was changed.`);
    }
    if (!v || typeof v !== "object" || Array.isArray(v)) return setError("The data must be a JSON object ({ … }). Nothing was changed.");
    setError(null);
    const kept = Object.fromEntries(Object.entries(data).filter(([k]) => k.startsWith("_")));
    onApply({ ...(v as Record<string, any>), ...kept });
  };
  const id = `node-json-${nodeId}`;
  return (
    <div className="field json-tab" data-json-tab>
      <label htmlFor={id}>The node's data as JSON</label>
      <textarea
        id={id}
        className="mono"
        rows={16}
        spellCheck={false}
        value={draft}
        aria-invalid={!!error}
        onChange={(e) => {
          setDraft(e.target.value);
          setError(null);
        }}
        onKeyDown={(e) => {
          if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
            e.preventDefault();
            apply();
          }
        }}
      />
      <p className="muted small">
        Every setting of the step, also those without a field in the Settings tab (e.g. a UX step's <code>summary</code> and{" "}
        <code>remindAfterSeconds</code>, an entity movement's <code>setMetadata</code>). Apply (Ctrl+Enter) replaces the step's data; Save checks it.
      </p>
      {error && (
        <p className="field-error" role="alert" data-json-error>
          {error}
        </p>
      )}
      <div className="json-actions">
        <button type="button" className="btn small" data-action="json-apply" onClick={apply} disabled={draft === shown}>
          Apply
        </button>
        <button
          type="button"
          className="btn small ghost"
          data-action="json-reset"
          disabled={draft === shown}
          onClick={() => {
            setDraft(shown);
            setError(null);
          }}
        >
          Reset
        </button>
      </div>
    </div>
  );
}
