// What a run's rows say about its graph: a node's instances folded into
// one status, whether an edge was taken, a row's loop iteration.
import type { Edge } from "@xyflow/react";
import type { Compensation, FlowGraph, NodeState, Run } from "../../api";
import { edgeKind } from "../../graph";

export interface Agg {
  status: string;
  total: number;
  counts: Record<string, number>;
  // wakeAt: the earliest wake time of the node's sleeping instances.
  wakeAt?: string | null;
  // iteration: the latest loop iteration of the node's rows (0: first pass).
  iteration: number;
  // byHand: how many of its completed instances a person completed by hand.
  byHand: number;
  // eventName, eventKey: what a lone waiting_for_event instance waits for.
  eventName?: string | null;
  eventKey?: string | null;
  // httpStatus: a lone completed HTTP instance's response status.
  httpStatus?: number | null;
  // childRunId: the run a lone SubFlow instance started.
  childRunId?: string | null;
}

// A row keyed <key>@<n> keeps iteration n of a node on a loop; the
// current iteration keeps the plain key (node ids never hold an @).
export function isHistory(s: NodeState): boolean {
  return s.key.includes("@");
}

// outputOf is a node's output when it is an object (an HTTP step's
// {status, headers, body}, a decision's {decision}, a Collector's {items,
// errors}), read loosely: its shape depends on the node's type.
export function outputOf(n: NodeState): Record<string, any> | undefined {
  return n.output && typeof n.output === "object" && !Array.isArray(n.output) ? (n.output as Record<string, any>) : undefined;
}

export function baseKey(key: string): string {
  const i = key.indexOf("@");
  return i < 0 ? key : key.slice(0, i);
}

export function iterationOf(s: NodeState): number {
  if (typeof s.iteration === "number") return s.iteration;
  const i = s.key.indexOf("@");
  return i < 0 ? 0 : Number(s.key.slice(i + 1)) || 0;
}

// aggregate folds a node's instances into one status and counts; byHand
// holds the keys a person completed by hand.
export function aggregate(states: NodeState[], byHand?: Set<string>): Agg {
  const counts: Record<string, number> = {};
  let instances = false;
  let wakeAt: string | null = null;
  let iteration = 0;
  let hand = 0;
  for (const s of states) {
    counts[s.status] = (counts[s.status] ?? 0) + 1;
    if (s.status === "completed" && byHand?.has(s.key)) hand++;
    iteration = Math.max(iteration, iterationOf(s));
    if (s.index?.length) instances = true;
    if (s.status === "sleeping" && s.wake_at && (!wakeAt || new Date(s.wake_at) < new Date(wakeAt))) wakeAt = s.wake_at;
  }
  if (instances) counts._instances = 1;
  const total = states.length;
  const one = total === 1 ? states[0] : null;
  const eventName = one?.status === "waiting_for_event" ? (one.event_name ?? null) : null;
  const eventKey = one?.status === "waiting_for_event" ? (one.event_key ?? null) : null;
  const httpStatus =
    one?.status === "completed" && String(one.type).toLowerCase() === "http" && typeof outputOf(one)?.status === "number" ? (outputOf(one)?.status as number) : null;
  let status = "pending";
  const done = (counts.completed ?? 0) + (counts.skipped ?? 0);
  if (counts.failed) status = "failed";
  else if (counts.running) status = "running";
  else if (counts.waiting_for_user) status = "waiting_for_user";
  else if (counts.sleeping) status = "sleeping";
  else if (counts.waiting_for_event) status = "waiting_for_event";
  else if (total && counts.skipped === total) status = "skipped";
  else if (total && done === total) status = "completed";
  else if (total && counts.cancelled === total) status = "cancelled";
  else if (done) status = "running";
  const childRunId = one?.child_run_id ?? null;
  return { status, total, counts, wakeAt, iteration, byHand: hand, eventName, eventKey, httpStatus, childRunId };
}

// edgeTaken says whether a run took an edge: true once any instance of its
// source took it, false once every instance decided without it (a skipped
// source takes none), null while undecided. A completed node with taken
// null took all its edges but its failure edges; a failed one took only
// the targets it lists.
export function edgeTaken(e: Edge, states: NodeState[] | undefined, runDone: boolean): boolean | null {
  if (!states?.length) return runDone ? false : null;
  let undecided = false;
  for (const s of states) {
    let took: boolean | null;
    if (s.status === "completed") took = Array.isArray(s.taken) ? s.taken.includes(e.target) : edgeKind(e.data) !== "failure";
    else if (s.status === "skipped") took = false;
    else if (s.status === "failed" && Array.isArray(s.taken)) took = s.taken.includes(e.target);
    else if ((s.status === "failed" || s.status === "cancelled") && runDone) took = false;
    else took = null;
    if (took) return true;
    if (took === null) undecided = true;
  }
  return undecided ? null : false;
}

// compensationEdge draws an edge from a step to its undo node: numbered in
// the order the undo nodes run once the run is compensated (undo 1 of 2 is
// the first), solid once its undo node completed, red where the
// compensation stopped; not taken when the run ended without undoing the
// step.
export function compensationEdge(e: Edge, comp: Compensation | null, undo: NodeState | undefined, runDone: boolean): Edge {
  const i = comp ? comp.steps.findIndex((s) => s.step === e.source && s.undo === e.target) : -1;
  const n = comp?.steps.length ?? 0;
  const failedHere = comp?.state === "failed" && comp.failed_node === e.target;
  const taken: boolean | null = i >= 0 ? (undo?.status === "completed" ? true : null) : comp || runDone ? false : null;
  const cls = taken === true ? "edge-taken" : taken === false ? "edge-not-taken" : "edge-open";
  const label = i >= 0 ? `undo ${i + 1} of ${n}${failedHere ? " · failed" : ""}` : "undo";
  return {
    ...e,
    label,
    animated: undo?.status === "running",
    className: `${e.className ?? ""} ${cls}${failedHere ? " edge-undo-failed" : ""}`,
    domAttributes: { ...(e.domAttributes as any), "data-taken": taken === null ? "open" : String(taken), "data-undo-order": i >= 0 ? String(i + 1) : "" } as any,
    ariaLabel: `Undo edge from ${e.source} to ${e.target}${i >= 0 ? `, undone ${i + 1} of ${n}` : ""}`,
  };
}

export function cmpIndex(a: number[] = [], b: number[] = []) {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? -1) - (b[i] ?? -1);
    if (d) return d;
  }
  return 0;
}

// stepsOf is a run's steps as a graph without edges, in the order they
// started, for a caller who may not read the flow.
export function stepsOf(run: Run): FlowGraph {
  const first = new Map<string, { type: string; at: string }>();
  for (const st of Object.values(run.nodes ?? {})) {
    const at = st.started_at ?? st.finished_at ?? "9999";
    const had = first.get(st.node_id);
    if (!had || at < had.at) first.set(st.node_id, { type: st.type, at });
  }
  const ids = [...first.entries()].sort((a, b) => (a[1].at < b[1].at ? -1 : a[1].at > b[1].at ? 1 : 0));
  return {
    nodes: ids.map(([id, v], i) => ({ id, type: v.type, position: { x: (i % 4) * 240, y: Math.floor(i / 4) * 140 }, data: {} })),
    edges: [],
  };
}
