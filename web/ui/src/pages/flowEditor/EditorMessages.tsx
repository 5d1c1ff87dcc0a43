// EditorMessages are the editor's lines above the canvas: the heat map's
// summary or error, an older version viewed, unsaved changes, the last
// save's outcome and the flow's warnings.
import type { Flow, FlowAnalytics } from "../../api";
import { Link } from "../../router";

export function EditorMessages({
  heatOn,
  heat,
  heatError,
  viewing,
  current,
  flowId,
  dirty,
  notice,
  saveError,
  flow,
}: {
  heatOn: boolean;
  heat: FlowAnalytics | null;
  heatError: string | null;
  viewing: number | undefined;
  current: number | undefined;
  flowId: string | null;
  dirty: boolean;
  notice: string | null;
  saveError: string | null;
  flow: Flow | null;
}) {
  return (
    <div className="editor-msgs" aria-live="polite">
      {heatOn && heat && (
        <div className="banner" data-heat-summary>
          Heat map, last 30 days: {heat.runs.started} runs, {heat.runs.completed} completed, {heat.runs.failed} failed, {heat.runs.running} still
          going. Rings mark steps that fail (yellow under 5 %, orange under 20 %, red above); edges show the share of runs each branch took.
        </div>
      )}
      {heatError && (
        <div className="error-box" role="alert">
          {heatError}
        </div>
      )}
      {viewing !== current && flowId && (
        <div className="banner">
          Viewing version {viewing} of {current}. Saving makes this graph the newest version.{" "}
          <Link to={`/flows/${flowId}`}>Back to the latest</Link>
        </div>
      )}
      {dirty && !saveError && <div className="banner subtle">Unsaved changes.</div>}
      {notice && <div className="banner ok">{notice}</div>}
      {saveError && (
        <div className="error-box" role="alert">
          {saveError}
        </div>
      )}
      {(flow?.warnings?.length ?? 0) > 0 && !dirty && (
        <div className="banner warn">
          {flow!.warnings!.map((w, i) => (
            <div key={i}>⚠ {w.message}</div>
          ))}
        </div>
      )}
    </div>
  );
}
