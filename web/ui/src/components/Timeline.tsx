import type { NodeState, Run } from "../api";
import { span, useNow } from "./common";

// dur writes a step's duration finely enough for quick steps: "340 ms",
// "2.4 s", then as countdowns do ("12m 5s").
export function dur(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  return span(ms);
}

// waitKind says what a step's running time was spent waiting for.
function waitKind(type: string): string {
  switch (type.toLowerCase()) {
    case "worker":
      return "waiting for a worker";
    case "http":
      return "waiting for the HTTP call";
    case "ux":
      return "waiting for a person";
    case "wait":
      return "sleeping";
    case "event":
      return "waiting for an event";
    case "subflow":
      return "waiting for the child run";
    default:
      return "working";
  }
}

interface Row {
  nodeId: string;
  type: string;
  count: number;
  start: number;
  end: number | null; // null: some instance still going
  // total and longest are the instances' own durations (start to finish,
  // or to now while going): for a Worker its time waiting for the worker.
  total: number;
  longest: number;
  statuses: Record<string, number>;
}

// Timeline lists the run's steps in the order they started: when each
// started and finished, how long it took and what it waited for, with a
// bar on the run's time axis; a step with several instances (a parallel
// region) or iterations (a loop) is one line summing them up.
// graphDepth is each node's distance in edges from the flow's first steps
// (breadth first; a loop's way back is not followed twice).
function graphDepth(edges: { source: string; target: string }[]): Map<string, number> {
  const depth = new Map<string, number>();
  const targets = new Set(edges.map((e) => e.target));
  let frontier = [...new Set(edges.map((e) => e.source))].filter((id) => !targets.has(id));
  for (let d = 0; frontier.length > 0; d++) {
    const next: string[] = [];
    for (const id of frontier) {
      if (depth.has(id)) continue;
      depth.set(id, d);
      for (const e of edges) if (e.source === id && !depth.has(e.target)) next.push(e.target);
    }
    frontier = next;
  }
  return depth;
}

export function Timeline({ run, edges = [] }: { run: Run; edges?: { source: string; target: string }[] }) {
  const now = useNow(1000);
  const rows = new Map<string, Row>();
  for (const st of Object.values(run.nodes ?? {}) as NodeState[]) {
    if (!st.started_at) continue;
    const s = Date.parse(st.started_at);
    const e = st.finished_at ? Date.parse(st.finished_at) : null;
    const d = (e ?? now) - s;
    const r = rows.get(st.node_id) ?? { nodeId: st.node_id, type: st.type, count: 0, start: s, end: 0, total: 0, longest: 0, statuses: {} };
    r.count++;
    r.start = Math.min(r.start, s);
    r.end = r.end === null || e === null ? null : Math.max(r.end, e);
    r.total += d;
    r.longest = Math.max(r.longest, d);
    r.statuses[st.status] = (r.statuses[st.status] ?? 0) + 1;
    rows.set(st.node_id, r);
  }
  // Steps fired by the same transaction start (and may finish) at the
  // same time: the one nearer the flow's start (it fired the others) comes
  // first, then the one that finished first.
  const depth = graphDepth(edges);
  const at = (id: string) => depth.get(id) ?? Infinity;
  const list = [...rows.values()].sort(
    (a, b) =>
      a.start - b.start || at(a.nodeId) - at(b.nodeId) || (a.end ?? Infinity) - (b.end ?? Infinity) || a.nodeId.localeCompare(b.nodeId),
  );
  if (list.length === 0) return null;
  const t0 = Date.parse(run.created_at);
  const t1 = Math.max(run.finished_at ? Date.parse(run.finished_at) : now, ...list.map((r) => r.end ?? now), t0 + 1);
  const pct = (t: number) => `${(((t - t0) / (t1 - t0)) * 100).toFixed(2)}%`;
  const time = (t: number) => new Date(t).toLocaleTimeString();
  return (
    <section className="timeline-panel" aria-label="Timeline" data-timeline>
      <h3>Timeline</h3>
      <p className="muted small">
        {dur(t1 - t0)} from start to {run.finished_at ? "finish" : "now"}
      </p>
      <ol className="run-timeline">
        {list.map((r) => {
          const end = r.end ?? now;
          const going = r.end === null;
          return (
            <li key={r.nodeId} data-timeline-node={r.nodeId} data-going={going || undefined}>
              <div className="tl-head">
                <strong className="mono">{r.nodeId}</strong>
                {r.count > 1 && <span className="muted small"> ×{r.count}</span>}
                <span className="tl-dur" data-duration-ms={Math.round(end - r.start)}>
                  {dur(end - r.start)}
                  {going ? "…" : ""}
                </span>
              </div>
              <div className="tl-track" aria-hidden="true">
                <span className={`tl-bar s-${going ? "running" : Object.keys(r.statuses)[0]}`} style={{ left: pct(r.start), width: `max(2px, calc(${pct(end)} - ${pct(r.start)}))` }} />
              </div>
              <div className="muted small">
                {time(r.start)} → {going ? "…" : time(end)} · {waitKind(r.type)}{" "}
                {r.count > 1 ? (
                  <span data-wait>
                    {dur(r.total / r.count)} avg, {dur(r.longest)} longest
                  </span>
                ) : (
                  <span data-wait>{dur(r.total)}</span>
                )}
              </div>
            </li>
          );
        })}
      </ol>
    </section>
  );
}
