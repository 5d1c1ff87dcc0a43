// ExprPreview shows, under an expression field, what it gives against the
// current sample: the step is tried alone (POST …/nodes/{key}/test) a
// moment after typing stops — a Transform's value, or whether an edge
// would be taken. Nothing is written as a run.
import { useEffect, useRef, useState } from "react";
import { api, ApiError } from "../api";
import { PlainProblem } from "./PlainProblem";
import type { Sample, TestAnswer } from "./sample";

type Shown = { state: "pending" } | { state: "value"; value: any } | { state: "taken"; taken: boolean } | { state: "error"; message: string; path?: string } | { state: "off"; why: string };

export function ExprPreview({
  flowId,
  nodeId,
  edgeId,
  text,
  sample,
  graph,
  manual,
}: {
  flowId: string | null;
  // nodeId: the step tried (an edge's source for a condition).
  nodeId: string;
  // edgeId: show whether this edge is taken rather than the step's value.
  edgeId?: string;
  text: string;
  sample: Sample;
  graph: () => unknown;
  // manual: try only when asked (a step whose test has effects, such as a request sent).
  manual?: string;
}) {
  const [shown, setShown] = useState<Shown | null>(null);
  const seq = useRef(0);
  const sampleRef = useRef(sample);
  sampleRef.current = sample;
  const graphRef = useRef(graph);
  graphRef.current = graph;
  const sampleKey = JSON.stringify(sample);
  // What the preview shown was worked out for: until it is for the text and
  // sample as they stand, the region is busy (aria-busy) — its text is
  // about to change, and what is under it to move.
  const key = JSON.stringify([text, sampleKey, flowId, nodeId, edgeId ?? null]);
  const [shownFor, setShownFor] = useState<string | null>(null);

  const run = async () => {
    const show = (s: Shown | null) => {
      setShown(s);
      setShownFor(key);
    };
    if (!text.trim()) return show(null);
    const n = ++seq.current;
    setShown({ state: "pending" });
    try {
      // A flow not saved yet is tried as its graph alone.
      const path = flowId ? `/flows/${flowId}/nodes/${encodeURIComponent(nodeId)}/test` : `/nodes/${encodeURIComponent(nodeId)}/test`;
      const a = await api<TestAnswer>("POST", path, { ...sampleRef.current, graph: graphRef.current() }, undefined, { quiet: true });
      if (n !== seq.current) return;
      if (edgeId) {
        const e = a.edges.find((x) => x.id === edgeId);
        if (e?.error) show({ state: "error", message: e.error });
        else if (a.error) show({ state: "error", message: `${nodeId} failed: ${a.error}` });
        else if (!e) show({ state: "off", why: "This edge is not among the step's edges yet." });
        else show({ state: "taken", taken: e.taken });
      } else if (a.error && !a.edges.some((x) => x.error)) show({ state: "error", message: a.error });
      // An edge's condition failing fails the step, not its expression:
      // the value shows here, the failure in that edge's own preview.
      else show({ state: "value", value: a.output });
    } catch (err) {
      if (n !== seq.current) return;
      if (err instanceof ApiError && err.code === "not_testable") show({ state: "off", why: `No preview: ${err.message.replace(/^not_testable: /, "")}` });
      else if (err instanceof ApiError && err.details?.length) {
        const mine = err.details.find((p) => (edgeId ? p.edge_id === edgeId : p.node_id === nodeId));
        const words = (p: { message: string }) => p.message.replace(/^(node|edge) "[^"]*": /, "");
        if (mine) show({ state: "error", message: words(mine), path: mine.path });
        else {
          // Another step's problem stops the try: said as that step's, not
          // under this field as if it were this expression's.
          const o = err.details[0];
          const whose = o.node_id ? `step ${o.node_id}` : o.edge_id ? `edge ${o.edge_id}` : "the flow";
          show({ state: "off", why: `No preview while ${whose} has a problem: ${words(o)}` });
        }
      } else show({ state: "error", message: (err as Error).message });
    }
  };

  useEffect(() => {
    if (manual) return;
    const t = window.setTimeout(run, 400);
    return () => window.clearTimeout(t);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [text, sampleKey, flowId, nodeId, edgeId, manual]);

  const busy = shown?.state === "pending" || (!manual && shownFor !== key);

  return (
    <div
      className="expr-preview"
      data-preview={shown?.state ?? "none"}
      aria-busy={busy}
      data-taken={shown?.state === "taken" ? String(shown.taken) : undefined}
      aria-live="polite"
    >
      {manual && (
        <button type="button" className="linklike small" onClick={run}>
          Preview ({manual})
        </button>
      )}
      {shown?.state === "pending" && <span className="muted small">Preview: working it out…</span>}
      {shown?.state === "value" && (
        <>
          <span className="muted small">Preview, with the sample: </span>
          <code className="mono" data-preview-value>
            {JSON.stringify(shown.value)}
          </code>
        </>
      )}
      {shown?.state === "taken" && (
        <span className="small" data-preview-value>
          Preview, with the sample: {shown.taken ? "✓ true — this edge would be taken" : "✗ false — this edge would not be taken"}
        </span>
      )}
      {shown?.state === "error" && (
        <span className="preview-error small">
          Preview: <PlainProblem message={shown.message} path={shown.path} src={text} />
        </span>
      )}
      {shown?.state === "off" && <span className="muted small">{shown.why}</span>}
    </div>
  );
}
