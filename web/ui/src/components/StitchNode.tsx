import { Handle, Position, type NodeProps } from "@xyflow/react";
import { memo, useMemo, type CSSProperties } from "react";
import { typeInfo, useNodeTypes } from "../nodetypes";
import { eventWaitSummary, httpSummary, subflowSummary, truncate, waitSummary } from "../graph";
import { Link } from "../router";
import { Countdown, span } from "./common";

// StitchNode draws one node on the editor canvas and in the run view.
// data._problems marks compile errors; data._run carries live status:
// {status, counts: {completed, failed, running, ...}, total} for parallel
// instances, and iteration: the latest loop iteration (0: the first pass)
// of a node on a loop.
export const StitchNode = memo(function StitchNode({ id, type, data, selected }: NodeProps) {
  const d = data as Record<string, any>;
  const problems: string[] = d._problems ?? [];
  const run = d._run as RunLook | undefined;
  const cls = ["snode", `snode-${String(type).toLowerCase()}`];
  if (selected) cls.push("selected");
  if (problems.length) cls.push("has-error");
  if (run) cls.push(`run-${run.status}`);
  // A fan-out with failures while other instances still go: painted as
  // going, with a failure mark, not as failed.
  const partial = !!run && run.status === "failed" && stillGoing(run.counts);
  if (partial) cls.push("run-partial");
  const heat = d._heat as HeatLook | undefined;
  if (heat && heat.fired > 0) cls.push(`heat-${heatLevel(heat)}`);
  const title = d.label || id;
  // Colour and mark are the type's (GET /api/v1/node-types); its CSS
  // class may add a shape of its own.
  const look = typeInfo(String(type));
  const style = look?.color ? ({ "--c": look.color } as CSSProperties) : undefined;
  const mark = look?.icon;
  return (
    <div className={cls.join(" ")} style={style} data-node-id={id} data-status={run?.status} data-partial={partial ? "true" : undefined} title={problems.join("\n") || undefined}>
      <Handle type="target" position={Position.Left} />
      <div className="snode-type">
        {mark && (
          <span className={`snode-mark ${type === "Condition" ? "snode-diamond" : ""}`} aria-hidden="true">
            {run?.status === "sleeping" ? "☾" : mark}{" "}
          </span>
        )}
        {String(type)}
      </div>
      <div className="snode-title" title={title}>
        {title}
      </div>
      {title !== id && (
        <div className="snode-id" title={id}>
          {id}
        </div>
      )}
      <Summary type={String(type)} d={d} />
      {run && <RunBadge run={run} id={id} />}
      {run && run.httpStatus !== undefined && run.httpStatus !== null && (
        <span className="snode-http-status" data-http-status={run.httpStatus} title="The response's status">
          HTTP {run.httpStatus}
        </span>
      )}
      {run?.childRunId && (
        <Link
          className="snode-child nodrag nopan"
          to={`/runs/${run.childRunId}`}
          data-child-run={run.childRunId}
          title="Open the run this step started"
          onClick={(e) => e.stopPropagation()}
        >
          child run →
        </Link>
      )}
      {run && (run.byHand ?? 0) > 0 && (
        <span className="snode-hand" data-by-hand={run.byHand} title="Completed by hand by a person, not by the step itself">
          {run.total > 1 ? `${run.byHand} by hand` : "by hand"}
        </span>
      )}
      {run && (run.iteration ?? 0) > 0 && (
        <span className="snode-iter" data-iteration={run.iteration! + 1} title={`On iteration ${run.iteration! + 1} of its loop`} aria-label={`iteration ${run.iteration! + 1}`}>
          ↺ ×{run.iteration! + 1}
        </span>
      )}
      {heat && <HeatBadge heat={heat} />}
      {problems.length > 0 && (
        <div className="snode-problem" role="note">
          ⚠ {problems[0]}
          {problems.length > 1 ? ` (+${problems.length - 1})` : ""}
        </div>
      )}
      <Handle type="source" position={Position.Right} />
    </div>
  );
});

// Summary says on the node what it does, where a glance helps: a
// Transform's expression, what a Wait waits for, a UX step's timeout.
function Summary({ type, d }: { type: string; d: Record<string, any> }) {
  let text: string | null = null;
  if (type === "Transform" && typeof d.expression === "string" && d.expression.trim()) text = truncate(d.expression, 40);
  if (type === "Wait") text = waitSummary(d);
  if (type === "HTTP") text = httpSummary(d);
  if (type === "SubFlow") text = subflowSummary(d);
  if (type === "Event") {
    const w = eventWaitSummary(d);
    text = w ? `waits for ${w}${typeof d.timeoutSeconds === "number" && d.timeoutSeconds > 0 ? ` · fails after ${span(d.timeoutSeconds * 1000)}` : ""}` : null;
  }
  if (type === "UX" && typeof d.timeoutSeconds === "number" && d.timeoutSeconds > 0)
    text = `times out after ${span(d.timeoutSeconds * 1000)}${d.onTimeout && d.onTimeout !== "fail" ? ` → ${d.onTimeout}` : ""}`;
  if (!text) return null;
  return (
    <div className={`snode-summary ${type === "Transform" || type === "HTTP" ? "mono" : ""}`} title={text}>
      {text}
    </div>
  );
}

interface RunLook {
  status: string;
  total: number;
  counts: Record<string, number>;
  wakeAt?: string | null;
  iteration?: number;
  byHand?: number;
  // eventName, eventKey: what a waiting_for_event node waits for.
  eventName?: string | null;
  eventKey?: string | null;
  // httpStatus: a completed HTTP node's response status.
  httpStatus?: number | null;
  // childRunId: the run a lone SubFlow instance started.
  childRunId?: string | null;
}

// eventWaitText is what a waiting Event node shows: "waiting for
// payment.received · key 42".
export function eventWaitText(name: string | null | undefined, key: string | null | undefined): string {
  return `waiting for ${name || "an event"}${key ? ` · key ${key}` : ""}`;
}

// stillGoing says whether some instances are still running or waiting.
function stillGoing(c: Record<string, number>): boolean {
  return !!(c.running || c.waiting_for_user || c.sleeping || c.waiting_for_event);
}

function RunBadge({ run, id }: { run: RunLook; id: string }) {
  const c = run.counts;
  if (run.total <= 1 && !(run.total === 1 && c._instances)) {
    return (
      <div className={`snode-status status-${run.status}`} data-event-wait={run.status === "waiting_for_event" ? "true" : undefined}>
        {run.status === "waiting_for_event" ? eventWaitText(run.eventName, run.eventKey) : run.status.replace(/_/g, " ")}
        {run.status === "sleeping" && run.wakeAt && (
          <>
            {" · "}
            <Countdown at={run.wakeAt} before="wakes in" due="waking…" />
          </>
        )}
      </div>
    );
  }
  const parts: string[] = [];
  if (c.completed) parts.push(`${c.completed} ✓`);
  if (c.failed) parts.push(`${c.failed} ✗`);
  if (c.running) parts.push(`${c.running} running`);
  if (c.waiting_for_user) parts.push(`${c.waiting_for_user} waiting`);
  if (c.sleeping) parts.push(`${c.sleeping} sleeping`);
  if (c.waiting_for_event) parts.push(`${c.waiting_for_event} waiting for event`);
  if (c.skipped) parts.push(`${c.skipped} skipped`);
  if (c.cancelled) parts.push(`${c.cancelled} cancelled`);
  return (
    <div className="snode-counts" aria-label={`${id}: ${run.total} instances`}>
      <strong>
        {id} ×{run.total}
      </strong>
      : {run.status === "failed" && stillGoing(c) ? "running, some failed: " : ""}
      {parts.join(" ") || "pending"}
    </div>
  );
}

// useFlowNodeTypes is React Flow's node types: every registered type,
// drawn by StitchNode (stable until the list of types changes).
export function useFlowNodeTypes() {
  const types = useNodeTypes();
  return useMemo(() => Object.fromEntries(types.map((t) => [t.type, StitchNode])), [types]);
}

// HeatLook is a node's figures in the editor's heat map (a node of
// GET /flows/{id}/analytics).
interface HeatLook {
  fired: number;
  completed?: number;
  failed?: number;
  waiting_now?: number;
  duration_ms?: { p50: number | null; p95?: number | null };
}

// heatLevel grades a node's failure rate: 0 none, 1 under 5 %, 2 under
// 20 %, 3 above.
function heatLevel(h: HeatLook): number {
  const rate = h.fired > 0 ? (h.failed ?? 0) / h.fired : 0;
  if (rate === 0) return 0;
  if (rate < 0.05) return 1;
  return rate < 0.2 ? 2 : 3;
}

function HeatBadge({ heat }: { heat: HeatLook }) {
  if (heat.fired === 0) return <div className="snode-heat muted" data-heat="none">no runs in 30 days</div>;
  const ms = (v: number | null | undefined) => (v == null ? "–" : v < 1000 ? `${Math.round(v)} ms` : span(v));
  const failed = heat.failed ?? 0;
  return (
    <div className="snode-heat" data-heat={heat.fired} data-heat-failed={failed}>
      {heat.fired} runs · p50 {ms(heat.duration_ms?.p50)} · p95 {ms(heat.duration_ms?.p95)}
      {failed > 0 ? ` · ${Math.round((failed / heat.fired) * 100)} % failed` : ""}
      {(heat.waiting_now ?? 0) > 0 ? ` · ${heat.waiting_now} waiting` : ""}
    </div>
  );
}
