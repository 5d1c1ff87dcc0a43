import { useState } from "react";
import { api, ApiError } from "../api";
import { asSample, drafts, fromRun, loadLastRun, parseSample, pinText, setAnswer as keepAnswer, setDraft as keepDraft, type Sample, type TestAnswer } from "./sample";

// TestTab tries the step alone with a sample — its input, earlier steps'
// outputs, the run's input and variables — against the graph as it stands
// in the editor (unsaved edits included), and shows its output, why it
// failed, and which of its edges would be taken. The sample starts from
// the node's pinned sample, else empty ("From the last run" fills it in);
// nothing is written as a run. "Pin this input" keeps the sample with the
// flow's layout (onPin; null unpins).
export function TestTab({
  flowId,
  nodeId,
  graph,
  pinned = null,
  onPin,
}: {
  flowId: string | null;
  nodeId: string;
  graph: () => unknown;
  pinned?: unknown;
  onPin?: (s: Sample | null) => void;
}) {
  const key = `${flowId}/${nodeId}`;
  const pin = asSample(pinned);
  const [draft, setDraftState] = useState(drafts.get(key) ?? (pin ? pinText(pin) : ""));
  // The draft is shared as you type: the data panel and previews use it.
  const setDraft = (t: string) => {
    setDraftState(t);
    if (flowId) keepDraft(flowId, nodeId, t);
  };
  const [loading, setLoading] = useState(false);
  const [answer, setAnswer] = useState<TestAnswer | null>(null);
  const [error, setError] = useState<string | null>(null);
  const fromLastRun = async () => {
    if (!flowId) return; // a flow not saved yet has had no run
    setLoading(true);
    setError(null);
    try {
      const run = await loadLastRun(flowId, true);
      const s: Sample = run ? fromRun(run, nodeId) : { input: {}, steps: {}, run: { input: {} }, vars: {} };
      setDraft(JSON.stringify(s, null, 2));
      if (!run) setError("The flow has no run yet: fill in the sample by hand.");
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setLoading(false);
    }
  };
  const test = async () => {
    let sample: unknown;
    try {
      sample = draft.trim() ? JSON.parse(draft) : {};
    } catch (err) {
      return setError(`The sample is not valid JSON: ${(err as Error).message}`);
    }
    if (!sample || typeof sample !== "object" || Array.isArray(sample)) return setError("The sample must be a JSON object: {input, steps, run, vars}.");
    setLoading(true);
    setError(null);
    setAnswer(null);
    try {
      // A flow not saved yet is tried as its graph alone.
      const path = flowId ? `/flows/${flowId}/nodes/${encodeURIComponent(nodeId)}/test` : `/nodes/${encodeURIComponent(nodeId)}/test`;
      const a = await api<TestAnswer>("POST", path, { ...(sample as object), graph: graph() });
      setAnswer(a);
      if (flowId) keepAnswer(flowId, nodeId, a);
    } catch (err) {
      setError(err instanceof ApiError && err.code === "not_testable" ? err.message.replace(/^not_testable: /, "") : (err as Error).message);
    } finally {
      setLoading(false);
    }
  };
  const pinDraft = () => {
    const s = parseSample(draft);
    if (!s) return setError("The sample must be a JSON object: {input, steps, run, vars}.");
    setError(null);
    onPin?.(s);
    setDraft(pinText(s));
  };
  const unpin = () => {
    onPin?.(null);
    if (isPin) setDraft("");
  };
  const isPin = !!pin && draft === pinText(pin);
  const id = `node-test-${nodeId}`;
  return (
    <div className="field test-tab" data-test-tab>
      <label htmlFor={id}>Sample: the step's input, earlier steps (steps.&lt;id&gt;.output), the run's input and variables</label>
      <textarea id={id} className="mono" rows={10} spellCheck={false} value={draft} placeholder='{"input": {}, "steps": {}, "run": {"input": {}}, "vars": {}}' onChange={(e) => setDraft(e.target.value)} />
      <div className="row">
        <button type="button" onClick={fromLastRun} disabled={loading || !flowId} title={flowId ? undefined : "A flow not saved yet has had no run"}>
          From the last run
        </button>
        {onPin && !isPin && (
          <button type="button" onClick={pinDraft} disabled={loading || !draft.trim()} data-pin>
            Pin this input
          </button>
        )}
        {onPin && pin && (
          <button type="button" onClick={unpin} disabled={loading} data-unpin>
            Unpin
          </button>
        )}
        <button type="button" className="primary" onClick={test} disabled={loading} data-test-step>
          {loading ? "Testing…" : "Test step"}
        </button>
      </div>
      <p className="muted small" data-pin-state={pin ? (isPin ? "pinned" : "edited") : "none"}>
        {pin ? (isPin ? "📌 Pinned: saved with the flow, used before the last run. Real runs never use it." : "📌 A sample is pinned; this one differs from it.") : "Not pinned."}
      </p>
      {error && (
        <p className="field-error" role="alert">
          ⚠ {error}
        </p>
      )}
      {answer && (
        <div className="test-result" data-test-result={answer.error ? "failed" : "completed"}>
          <p className="muted small">
            {answer.error ? "Failed" : "Completed"} in {answer.duration_ms} ms
          </p>
          {answer.error ? (
            <p className="field-error" data-test-error>
              {answer.error}
            </p>
          ) : (
            <pre className="mono" data-test-output>
              {JSON.stringify(answer.output, null, 2)}
            </pre>
          )}
          {answer.edges.length > 0 && (
            <ul className="test-edges">
              {answer.edges.map((e) => (
                <li key={e.target} data-edge-target={e.target} data-taken={e.taken ? "true" : "false"}>
                  {e.taken ? "✓" : "✗"} → {e.target}
                  {e.label && <span className="mono muted"> ({e.label})</span>}
                  {e.error && <span className="field-error"> {e.error}</span>}
                </li>
              ))}
            </ul>
          )}
          {answer.logs?.map((l, i) => (
            <p key={i} className="mono small">
              ✎ {l.message}
            </p>
          ))}
        </div>
      )}
    </div>
  );
}
