import { Background, Controls, ReactFlow, ReactFlowProvider, useStore, useUpdateNodeInternals, type Edge, type NodeChange } from "@xyflow/react";
import { useCallback, useEffect, useMemo, useRef, useState, type FormEvent } from "react";
import { api, ApiError, can, currentMe, describe, listAll, stream, type Compensation, type Flow, type FlowGraph, type NodeState, type Run, type StreamEvent, type Version } from "../api";
import { ago, Countdown, ErrorBox, isNotFound, Json, NotFound, span, Spinner, Status, useThrottled } from "../components/common";
import { FitOnOpen } from "../components/FitOnOpen";
import { edgeTypes } from "../components/LoopEdge";
import { Timeline } from "../components/Timeline";
import { eventWaitText, useFlowNodeTypes } from "../components/StitchNode";
import { loadNodeTypes } from "../nodetypes";
import { useFlowNames } from "../flows";
import { edgeKind, isCompensation, isLoop, loopsOf, outcomesOf, toCanvas, truncate, type CanvasNode, type LoopInfo } from "../graph";
import { Link } from "../router";
import { Answer } from "./Approvals";
import { RunId } from "./RunList";
import { taskEventText } from "../components/taskwords";

interface Agg {
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
function outputOf(n: NodeState): Record<string, any> | undefined {
  return n.output && typeof n.output === "object" && !Array.isArray(n.output) ? (n.output as Record<string, any>) : undefined;
}

function baseKey(key: string): string {
  const i = key.indexOf("@");
  return i < 0 ? key : key.slice(0, i);
}

function iterationOf(s: NodeState): number {
  if (typeof s.iteration === "number") return s.iteration;
  const i = s.key.indexOf("@");
  return i < 0 ? 0 : Number(s.key.slice(i + 1)) || 0;
}

// aggregate folds a node's instances into one status and counts; byHand
// holds the keys a person completed by hand.
function aggregate(states: NodeState[], byHand?: Set<string>): Agg {
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
function edgeTaken(e: Edge, states: NodeState[] | undefined, runDone: boolean): boolean | null {
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
function compensationEdge(e: Edge, comp: Compensation | null, undo: NodeState | undefined, runDone: boolean): Edge {
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

// CompensationBanner says where a run's compensation is: the steps it
// undoes, in the order their undo steps run, and how it ended.
function CompensationBanner({ comp, byNode }: { comp: Compensation; byNode: Record<string, NodeState[]> }) {
  const head =
    comp.state === "compensating"
      ? `Compensating${comp.reason === "cancelled" ? " (cancelled with undo)" : ""}: undoing ${comp.steps.length} completed step${comp.steps.length === 1 ? "" : "s"}, the last completed first.`
      : comp.state === "compensated"
        ? `Compensated: ${comp.steps.length ? `${comp.steps.length} completed step${comp.steps.length === 1 ? " was" : "s were"} undone` : "there was no completed step to undo"}.`
        : comp.state === "failed"
          ? `Compensation stopped: undo step ${comp.failed_node} failed. Retry it (or complete it by hand) to go on undoing.`
          : "Compensation interrupted: the run was cancelled or passed its deadline while undoing.";
  return (
    <div className="banner compensating" role="status" data-compensation={comp.state}>
      <strong>{head}</strong>
      {comp.steps.length > 0 && (
        <ol>
          {comp.steps.map((s) => (
            <li key={s.undo} data-undo-step={s.undo}>
              <span className="mono">{s.undo}</span> undoes <span className="mono">{s.step}</span> — {byNode[s.undo]?.[0]?.status ?? "pending"}
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}

// RunView shows a run; focus (?key=) names a node instance to open, as a
// sub-flow run's breadcrumb does for its parent's SubFlow step.
export function RunView({ runId, focus = null }: { runId: string; focus?: string | null }) {
  const flowNodeTypes = useFlowNodeTypes();
  const [run, setRun] = useState<Run | null>(null);
  const [graph, setGraph] = useState<FlowGraph | null>(null);
  const [flow, setFlow] = useState<Flow | null>(null);
  const [version, setVersion] = useState<number | null>(null);
  const [versions, setVersions] = useState<Version[]>([]);
  const [migrating, setMigrating] = useState(false);
  const [migrated, setMigrated] = useState<number | null>(null);
  const [error, setError] = useState<unknown>(null);
  // flowHidden: the caller may not read the flow (an approver reading a
  // run they are part of): the canvas shows the run's steps without edges.
  const [flowHidden, setFlowHidden] = useState(false);
  const me = currentMe().me;
  const [live, setLive] = useState(false);
  const [selected, setSelected] = useState<string | null>(null);
  const focused = useRef(false);
  const [actionError, setActionError] = useState<string | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const events = useRef<StreamEvent[]>([]);
  const seen = useRef(new Set<number>());
  const [eventCount, setEventCount] = useState(0);

  // Reads of the run may answer out of order (the first read and the
  // refresh an event asks for, under load): an answer to a read older than
  // the one shown is dropped, or the view would stay a step behind (a Wait
  // never seen sleeping) until the next event.
  const asked = useRef(0);
  const answered = useRef(0);
  const readRun = useCallback(
    async (current: () => boolean) => {
      const n = ++asked.current;
      try {
        const r = await api<Run>("GET", `/runs/${runId}`);
        if (!current() || n < answered.current) return;
        answered.current = n;
        setRun(r);
        setError(null);
      } catch (err) {
        if (!current() || n < answered.current) return;
        setError(err);
      }
    },
    [runId],
  );
  const fetchRun = useCallback(() => readRun(() => true), [readRun]);

  useEffect(() => {
    let cancelled = false;
    void readRun(() => !cancelled);
    return () => {
      cancelled = true;
    };
  }, [readRun]);

  // The flow and the run's version of it, read again when the run moves
  // to another version (a migration).
  const flowId = run?.flow_id;
  const versionId = run?.flow_version_id;
  useEffect(() => {
    if (!flowId || !versionId) return;
    let cancelled = false;
    (async () => {
      try {
        const [f, vs] = await Promise.all([api<Flow>("GET", `/flows/${flowId}`), listAll<Version>(`/flows/${flowId}/versions`, "versions"), loadNodeTypes()]);
        const v = vs.find((x) => x.id === versionId);
        const full = v ? await api<Version>("GET", `/flows/${flowId}/versions/${v.number}`) : null;
        if (cancelled) return;
        setFlow(f);
        setVersions(vs);
        setVersion(v?.number ?? null);
        setGraph(full?.graph ?? f.graph ?? { nodes: [], edges: [] });
      } catch (err) {
        if (cancelled) return;
        if (err instanceof ApiError && (err.status === 403 || err.status === 404)) setFlowHidden(true);
        else setError(err);
      }
    })();
    return () => {
      cancelled = true;
    };
  }, [flowId, versionId]);
  const shownGraph = useMemo(() => graph ?? (flowHidden && run ? stepsOf(run) : null), [graph, flowHidden, run]);

  const size = run?.nodes ? Object.keys(run.nodes).length : 0;
  const refresh = useThrottled(() => void fetchRun(), Math.min(5000, 250 + size / 5));
  const bump = useThrottled(() => setEventCount(events.current.length), 250);
  useEffect(
    () =>
      stream(
        `/runs/${runId}/events`,
        (e) => {
          if (seen.current.has(e.id)) return; // a replay after a reconnect
          seen.current.add(e.id);
          events.current.push(e);
          if (events.current.length > 50000) events.current.splice(0, 10000);
          bump();
          refresh();
        },
        setLive,
      ),
    [runId, refresh, bump],
  );

  // The current rows by node (one per instance), and the rows of the
  // earlier iterations of nodes on a loop, which are not instances.
  const [byNode, history] = useMemo(() => {
    const m: Record<string, NodeState[]> = {};
    const h: Record<string, NodeState[]> = {};
    for (const s of Object.values(run?.nodes ?? {})) ((isHistory(s) ? h : m)[s.node_id] ??= []).push(s);
    for (const k in m) m[k].sort((a, b) => cmpIndex(a.index, b.index));
    for (const k in h) h[k].sort((a, b) => iterationOf(a) - iterationOf(b));
    return [m, h];
  }, [run]);
  const loops = useMemo(() => (shownGraph ? loopsOf(shownGraph) : []), [shownGraph]);
  // Open the instance named by ?key= once the run is read.
  useEffect(() => {
    if (focused.current || !focus || !run?.nodes) return;
    focused.current = true;
    const st = run.nodes[focus];
    if (st) setSelected(st.node_id);
  }, [focus, run]);
  // SubFlow nodes show the name of the flow they run.
  const flowNames = useFlowNames(!flowHidden && !!graph?.nodes.some((n) => n.type === "SubFlow"));
  // The keys whose current row a person completed by hand: their last
  // start (node.status running) or completion by hand was the latter (a
  // loop's next iteration starts the key again).
  const byHandList = useMemo(() => {
    const last = new Map<string, boolean>();
    for (const e of events.current) {
      if (!e.key) continue;
      if (e.type === "node.completed_by_hand") last.set(e.key, true);
      else if (e.type === "node.status" && e.payload?.status === "running") last.set(e.key, false);
    }
    return JSON.stringify([...last].filter(([, v]) => v).map(([k]) => k));
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [eventCount]);
  // A new set only when the keys change: the canvas is rebuilt on it.
  const byHand = useMemo(() => new Set<string>(JSON.parse(byHandList)), [byHandList]);
  // The sizes React Flow measured, handed back with every rebuilt node: a
  // node given without them is hidden until measured again, a blink in
  // which a click falls through to the pane.
  const sizes = useRef(new Map<string, { width: number; height: number }>());
  const onNodesChange = useCallback((changes: NodeChange[]) => {
    for (const c of changes) if (c.type === "dimensions" && c.dimensions) sizes.current.set(c.id, c.dimensions);
  }, []);

  const canvas = useMemo(() => {
    if (!shownGraph) return null;
    const c = toCanvas(shownGraph);
    const nodes: CanvasNode[] = c.nodes.map((n) => ({
      ...n,
      draggable: false,
      connectable: false,
      selected: n.id === selected,
      measured: sizes.current.get(n.id),
      data: {
        ...n.data,
        ...(n.type === "SubFlow" && flowNames[n.data.flow] ? { _flowName: flowNames[n.data.flow] } : {}),
        _run: aggregate(byNode[n.id] ?? [], byHand),
      },
    }));
    // A paused run is not done: its open edges may still be taken.
    const runDone = !!run && run.status !== "running" && run.status !== "paused" && run.status !== "queued";
    const comp = run?.compensation ?? null;
    const edges: Edge[] = c.edges.map((e) => {
      if (isCompensation(e.data as any)) return compensationEdge(e, comp, byNode[e.target]?.[0], runDone);
      // A loop edge was taken by the earlier iterations of its source.
      const rounds = isLoop(e.data) ? (history[e.source] ?? []).filter((s) => Array.isArray(s.taken) && s.taken.includes(e.target)).length : 0;
      const taken = rounds ? true : edgeTaken(e, byNode[e.source], runDone);
      const cls = taken === true ? "edge-taken" : taken === false ? "edge-not-taken" : "edge-open";
      return {
        ...e,
        label: rounds ? `${e.label} · went round ${rounds}×` : e.label,
        animated: taken === null && run?.status === "running",
        className: `${e.className ?? ""} ${cls}`,
        domAttributes: { ...(e.domAttributes as any), "data-taken": taken === null ? "open" : String(taken) } as any,
        ariaLabel: `Edge from ${e.source} to ${e.target}${taken === true ? ", taken" : taken === false ? ", not taken" : ""}`,
      };
    });
    return { nodes, edges };
    // flowNodeTypes: built again once the node types have loaded.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [shownGraph, byNode, history, selected, run, byHand, flowNames, flowNodeTypes]);

  // act runs an action on the run and reads the run again; a refusal (a
  // 409 when the run moved on meanwhile) is shown with the server's words,
  // and the run is read again all the same so the buttons match its state.
  async function act(fn: () => Promise<unknown>, what?: string) {
    setActionError(null);
    try {
      await fn();
    } catch (err) {
      setActionError(what ? `${what}: ${refusal(err)}` : refusal(err));
    }
    await fetchRun();
  }

  async function control(action: "pause" | "resume") {
    if (!run) return;
    setBusy(action);
    try {
      await act(() => api("POST", `/runs/${run.id}/${action}`), action === "pause" ? "Could not pause the run" : "Could not resume the run");
    } finally {
      setBusy(null);
    }
  }

  if (error && !run && isNotFound(error)) return <NotFound what="run" id={runId} back="/runs" backLabel="All runs" />;
  if (error && !run) return <ErrorBox error={error} onRetry={fetchRun} />;
  if (!run || !canvas) return <Spinner label="Loading run…" />;

  const pausedAt = run.status === "paused" ? [...events.current].reverse().find((e) => e.type === "run.paused")?.created_at : undefined;
  // A queued run's run.queued event names the run it waits behind.
  const queuedEv = run.status === "queued" ? [...events.current].reverse().find((e) => e.type === "run.queued") : undefined;
  const behind: string | undefined = typeof queuedEv?.payload?.behind === "string" ? queuedEv.payload.behind : undefined;

  return (
    <section className="runview" aria-label="Run" data-run-status={run.status}>
      {run.parent_run_id && <ParentCrumb parentRunId={run.parent_run_id} parentKey={run.parent_key ?? ""} />}
      <div className="editor-bar">
        <div className="run-title">
          <h1>
            {flow ? <Link to={`/flows/${flow.id}${version && version !== flow.version.number ? `?version=${version}` : ""}`}>{flow.name}</Link> : "Run"}
            {version ? <span className="muted"> v{version}</span> : null}
          </h1>
          <span className="mono muted">{run.id}</span>
        </div>
        <Status status={run.status} />
        <span className={`live ${live ? "on" : ""}`} aria-live="polite">
          {live ? "● live" : "○ reconnecting…"}
        </span>
        <div className="bar-actions">
          {run.entity_id && flow?.board_id && (
            <Link className="btn ghost" to={`/boards/${flow.board_id}?entity=${run.entity_id}`}>
              Entity
            </Link>
          )}
          {can(me, "admin") && (
            <Link className="btn ghost" to={`/audit?target=${encodeURIComponent(`run:${run.id}`)}`} data-link="audit" title="Who started, decided and changed this run">
              Audit trail
            </Link>
          )}
          {run.status === "running" && can(me, "operate") && (
            <button
              type="button"
              className="btn"
              data-action="pause"
              disabled={busy !== null}
              title="Nothing new starts until you resume; steps already running finish and their results are kept"
              onClick={() => void control("pause")}
            >
              {busy === "pause" ? "Pausing…" : "Pause"}
            </button>
          )}
          {run.status === "paused" && can(me, "operate") && (
            <button
              type="button"
              className="btn primary"
              data-action="resume"
              disabled={busy !== null}
              title="Start what became ready while the run was paused, and go on"
              onClick={() => void control("resume")}
            >
              {busy === "resume" ? "Resuming…" : "Resume"}
            </button>
          )}
          {MIGRATABLE.includes(run.status) && can(me, "operate") && (
            <button
              type="button"
              className="btn"
              data-action="migrate"
              aria-expanded={migrating}
              title="Move this run onto another version of its flow"
              onClick={() => {
                setMigrating((m) => !m);
                setMigrated(null);
              }}
            >
              Migrate…
            </button>
          )}
          {(run.status === "running" || run.status === "paused" || run.status === "failed" || run.status === "queued") && can(me, "operate") && (
            <button
              type="button"
              className="btn danger"
              data-action="cancel"
              title={run.status === "failed" ? "Abandon this failed run instead of retrying it" : undefined}
              onClick={() => {
                if (confirm("Cancel this run? Nodes still running are cancelled and nothing else fires.")) void act(() => api("POST", `/runs/${run.id}/cancel`));
              }}
            >
              Cancel run
            </button>
          )}
          {(run.status === "running" || run.status === "paused" || run.status === "failed") &&
            !run.compensation &&
            can(me, "operate") &&
            !!shownGraph?.edges.some((e) => isCompensation(e.data as any)) && (
              <button
                type="button"
                className="btn danger"
                data-action="cancel-compensate"
                title="Cancel, then run the undo steps of the completed steps, the last completed first"
                onClick={() => {
                  if (confirm("Cancel this run and undo its completed steps? Their undo steps run one by one, the last completed first."))
                    void act(() => api("POST", `/runs/${run.id}/cancel`, { compensate: true }), "Could not cancel the run");
                }}
              >
                Cancel and undo
              </button>
            )}
        </div>
      </div>
      {migrating && MIGRATABLE.includes(run.status) && (
        <Migrate
          run={run}
          versions={versions}
          current={version}
          onClose={() => setMigrating(false)}
          onDone={(r, n) => {
            setRun(r);
            setMigrating(false);
            setMigrated(n);
          }}
          onRefused={fetchRun}
        />
      )}
      {migrated !== null && (
        <div className="banner ok" role="status" data-migrated={migrated}>
          Moved to version {migrated}. Steps this version adds start as soon as what they wait for is done.
        </div>
      )}
      {actionError && (
        <div className="error-box" role="alert">
          {actionError}
        </div>
      )}
      {run.status === "paused" && (
        <div className="banner paused" role="status" data-paused>
          <strong>
            <span className="pause-icon" aria-hidden="true" />
            Paused{pausedAt ? ` ${ago(pausedAt)}` : ""}.
          </strong> Nothing new starts while the run is paused: steps already running finish and their
          results are kept, and what they make ready waits. Resume to go on.
        </div>
      )}
      {run.status === "queued" && (
        <div className="banner queued" role="status" data-queued>
          <strong>
            Queued{queuedEv ? ` ${ago(queuedEv.created_at)}` : ""}.
          </strong>{" "}
          This run waits its turn: its entity already has a run of this flow going
          {behind ? (
            <>
              {" — "}
              <Link to={`/runs/${behind}`} data-behind={behind}>
                <RunId id={behind} />
              </Link>
            </>
          ) : null}
          . It begins by itself when that run ends (the flow's entity concurrency is “queue”); none of its steps has started yet.
        </div>
      )}
      {run.compensation && <CompensationBanner comp={run.compensation} byNode={byNode} />}
      {run.error && <div className="error-box">Run failed: {run.error}</div>}
      {run.variables && Object.keys(run.variables).length > 0 && (
        <details className="run-variables" data-run-variables>
          <summary>Variables ({Object.keys(run.variables).length})</summary>
          <dl>
            {Object.entries(run.variables).map(([k, v]) => (
              <div key={k} data-variable={k}>
                <dt className="mono">vars.{k}</dt>
                <dd className="mono">{JSON.stringify(v)}</dd>
              </div>
            ))}
          </dl>
        </details>
      )}
      {flowHidden && (
        <p className="banner subtle" data-flow-hidden>
          Your role may not read this run's flow: its steps are shown without their connections.
        </p>
      )}
      <div className="editor-body">
        <div className="canvas">
          <ReactFlowProvider>
            <ReactFlow
              colorMode="system"
              nodes={canvas.nodes}
              edges={canvas.edges}
              nodeTypes={flowNodeTypes}
              edgeTypes={edgeTypes}
              onNodesChange={onNodesChange}
              onNodeClick={(_, n) => setSelected(n.id)}
              onPaneClick={() => setSelected(null)}
              nodesDraggable={false}
              nodesConnectable={false}
              elementsSelectable
              minZoom={0.1}
              proOptions={{ hideAttribution: true }}
            >
              <FitOnOpen />
              <MeasureUnsized />
              <Background gap={16} />
              <Controls showInteractive={false} />
            </ReactFlow>
          </ReactFlowProvider>
          {run.status === "paused" && (
            <div className="canvas-paused" aria-hidden="true">
              <span className="pause-icon" />
              Paused
            </div>
          )}
          <Legend />
        </div>
        <aside className="side" aria-label="Details">
          {selected ? (
            <NodeDetail
              key={selected}
              nodeId={selected}
              outcomes={outcomesOf(graph?.nodes.find((n) => n.id === selected)?.data ?? undefined)}
              form={graph?.nodes.find((n) => n.id === selected)?.data?.form ?? null}
              decideHere={!flowHidden && can(me, "decide")}
              operate={can(me, "operate")}
              nodeType={graph?.nodes.find((n) => n.id === selected)?.type ?? ""}
              prompt={String(graph?.nodes.find((n) => n.id === selected)?.data?.prompt ?? "")}
              label={String(graph?.nodes.find((n) => n.id === selected)?.data?.label ?? "")}
              remindAfter={Number(graph?.nodes.find((n) => n.id === selected)?.data?.remindAfterSeconds) || 0}
              initialKey={focus && run.nodes?.[focus]?.node_id === selected ? focus : null}
              runStatus={run.status}
              states={byNode[selected] ?? []}
              history={history[selected] ?? []}
              loop={loops.find((l) => l.body.has(selected)) ?? null}
              events={events.current}
              eventCount={eventCount}
              onRetry={(key) => act(() => api("POST", `/runs/${run.id}/nodes/${encodeURIComponent(key)}/retry`), `Could not retry ${key}`)}
              runId={run.id}
              onAnswered={fetchRun}
            />
          ) : (
            <>
              <Timeline run={run} />
              <RunSummary run={run} events={events.current} eventCount={eventCount} />
            </>
          )}
        </aside>
      </div>
    </section>
  );
}

// The node statuses, in the order a node goes through them, as the canvas
// paints them.
const LEGEND = ["pending", "running", "waiting_for_user", "sleeping", "waiting_for_event", "completed", "failed", "skipped", "cancelled"];

function Legend() {
  return (
    <ul className="legend" aria-label="Node statuses">
      {LEGEND.map((s) => (
        <li key={s}>
          <Status status={s} />
        </li>
      ))}
    </ul>
  );
}

function cmpIndex(a: number[] = [], b: number[] = []) {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? -1) - (b[i] ?? -1);
    if (d) return d;
  }
  return 0;
}

function RunSummary({ run, events }: { run: Run; events: StreamEvent[]; eventCount: number }) {
  const recent = events.slice(-100);
  return (
    <div className="settings">
      <h2>Run</h2>
      <dl className="kv">
        <dt>Status</dt>
        <dd>
          <Status status={run.status} />
        </dd>
        <dt>Started</dt>
        <dd title={run.created_at}>
          {ago(run.created_at)}
          {run.started_by ? (
            <>
              {" by "}
              <span data-started-by>{run.started_by}</span>
            </>
          ) : null}
        </dd>
        <dt>Finished</dt>
        <dd title={run.finished_at ?? ""}>{run.finished_at && run.status !== "paused" ? ago(run.finished_at) : "—"}</dd>
      </dl>
      <p className="muted small">Click a node to see its input, output, attempts and events.</p>
      <h3>Input</h3>
      <Json value={run.input} label="input" />
      <h3>Output</h3>
      <Json value={run.output} label="output yet" />
      <h3>Timeline</h3>
      {recent.length === 0 ? (
        <p className="muted">No events yet.</p>
      ) : (
        <ol className="events timeline" aria-label="Run events" start={events.length - recent.length + 1}>
          {recent.map((e) => (
            <EventItem key={e.id} e={e} withKey />
          ))}
        </ol>
      )}
    </div>
  );
}

function EventItem({ e, withKey }: { e: StreamEvent; withKey?: boolean }) {
  return (
    <li className={EVENT_CLASS[e.type]} data-event={e.type}>
      <span className="muted" title={e.created_at}>
        {new Date(e.created_at).toLocaleTimeString()}
      </span>{" "}
      {withKey && e.key ? <span className="mono">{e.key} </span> : null}
      <strong>{EVENT_LABEL[e.type] ?? e.type}</strong> {eventSummary(e)}
    </li>
  );
}

// Readable names of the events a person caused or that change the run's
// course; the others show their type.
const EVENT_LABEL: Record<string, string> = {
  "loop.iteration": "↺ loop",
  "node.completed_by_hand": "completed by hand",
  "node.reminder": "reminder sent",
  "node.rerun": "re-run",
  "run.paused": "run paused",
  "run.unpaused": "run resumed",
  "run.queued": "run queued",
  "run.migrated": "run migrated",
  "node.child_started": "↳ child run started",
  "node.child_finished": "↳ child run finished",
  "node.log": "✎ log",
};
const EVENT_CLASS: Record<string, string> = {
  "loop.iteration": "event-loop",
  "node.completed_by_hand": "event-hand",
  "run.paused": "event-control",
  "run.unpaused": "event-control",
  "run.queued": "event-control",
  "run.migrated": "event-control",
};

const FILTERS = ["all", "failed", "running", "waiting_for_user", "sleeping", "waiting_for_event", "completed", "skipped", "cancelled"];

function NodeDetail(props: {
  nodeId: string;
  outcomes: string[];
  // nodeType: the node's type in the run's graph (a Splitter cannot be
  // completed by hand).
  nodeType: string;
  // prompt, label: what a UX node asks a person, and its name, in the
  // run's version ("" when it has none).
  prompt?: string;
  label?: string;
  // remindAfter: a UX node's remindAfterSeconds in the run's version (0:
  // no reminders).
  remindAfter: number;
  // initialKey: the instance to show first (?key=).
  initialKey?: string | null;
  // form: a UX node's form (data.form), null without one.
  form?: Record<string, any> | null;
  // decideHere: the caller may decide a waiting UX node here (else the
  // inbox is pointed to); operate: may retry, rerun, complete by hand.
  decideHere: boolean;
  operate: boolean;
  runStatus: Run["status"];
  states: NodeState[];
  // history: the rows of the node's earlier loop iterations (<key>@<n>).
  history: NodeState[];
  // loop: the loop the node is on, or null.
  loop: LoopInfo | null;
  events: StreamEvent[];
  eventCount: number;
  runId: string;
  onRetry: (key: string) => Promise<void>;
  onAnswered: () => void;
}) {
  const { nodeId, states, events, runId } = props;
  const [filter, setFilter] = useState("all");
  const [key, setKey] = useState<string | null>(
    props.initialKey && states.some((s) => s.key === props.initialKey) ? props.initialKey : states.length === 1 ? states[0].key : null,
  );
  const shown = states.filter((s) => filter === "all" || s.status === filter);
  // upTo: how many instances the list shows, 200 more at a time.
  const [upTo, setUpTo] = useState(200);
  const latest = states.find((s) => s.key === key) ?? (states.length === 1 ? states[0] : null);
  // The iterations of the chosen instance, the current one last; null
  // shows the current one.
  const [iter, setIter] = useState<number | null>(null);
  const rounds = latest ? [...props.history.filter((h) => baseKey(h.key) === latest.key), latest] : [];
  const current = (iter !== null ? rounds.find((r) => iterationOf(r) === iter) : undefined) ?? latest;
  const isLatest = current === latest;
  // An event belongs to the iteration its loop had begun when it came:
  // the loop.iteration events of the instance's loop source split them.
  const loopSrc = latest && props.loop ? props.loop.source + latest.key.slice(nodeId.length) : null;
  const turns = loopSrc
    ? events
        .filter((e) => e.type === "loop.iteration" && e.key === loopSrc && e.payload?.loop === props.loop!.edge)
        .map((e) => e.seq ?? e.id)
        .sort((a, b) => a - b)
    : [];
  const eventIter = (e: StreamEvent) => {
    if (e.type === "loop.iteration") return Number(e.payload?.iteration ?? 1) - 1;
    const at = e.seq ?? e.id;
    let lo = 0;
    let hi = turns.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (turns[mid] < at) lo = mid + 1;
      else hi = mid;
    }
    return lo; // the loop.iteration events before it
  };
  const nodeEvents = current ? events.filter((e) => e.key === baseKey(current.key) && (rounds.length < 2 || eventIter(e) === iterationOf(current))) : [];
  const agg = aggregate(states);
  const isCollector = props.nodeType === "Collector" || current?.type === "Collector";
  const byHand = current?.status === "completed" ? nodeEvents.filter((e) => e.type === "node.completed_by_hand").at(-1) : undefined;
  // What the server lets a person complete by hand: a stuck step of a run
  // still going (a failure a failure edge took on is final).
  const canSkip =
    !!current &&
    isLatest &&
    SKIPPABLE.includes(current.status) &&
    props.runStatus !== "completed" &&
    props.runStatus !== "cancelled" &&
    props.nodeType !== "Splitter" &&
    !(current.status === "failed" && Array.isArray(current.taken));

  return (
    <div className="settings node-detail">
      <h2>{nodeId}</h2>
      {props.nodeType === "UX" && (props.label || props.prompt) && (
        <div className="ux-ask" data-ux-prompt>
          {props.label && <p className="ux-ask-label">{props.label}</p>}
          {props.prompt ? <p className="ux-ask-prompt">{props.prompt}</p> : <p className="muted small">No prompt: the person sees the step's name only.</p>}
        </div>
      )}
      {states.length === 0 && <p className="muted">This node has not started yet.</p>}
      {states.length > 1 && (
        <>
          <p>
            {states.length} instances: {agg.counts.completed ?? 0} ✓ {agg.counts.failed ?? 0} ✗ {agg.counts.running ?? 0} running
            {agg.counts.waiting_for_user ? ` ${agg.counts.waiting_for_user} waiting` : ""}
            {agg.counts.sleeping ? ` ${agg.counts.sleeping} sleeping` : ""}
            {agg.counts.waiting_for_event ? ` ${agg.counts.waiting_for_event} waiting for an event` : ""}
            {agg.counts.skipped ? ` ${agg.counts.skipped} skipped` : ""}
            {agg.counts.cancelled ? ` ${agg.counts.cancelled} cancelled` : ""}
          </p>
          <label htmlFor="inst-filter">Show</label>
          <select id="inst-filter" value={filter} onChange={(e) => setFilter(e.target.value)}>
            {FILTERS.map((f) => (
              <option key={f} value={f}>
                {f.replace(/_/g, " ")}
              </option>
            ))}
          </select>
          <ul className="instances" aria-label="Instances">
            {shown.slice(0, upTo).map((s) => (
              <li key={s.key}>
                <button
                  type="button"
                  className={`linklike ${s.key === key ? "active" : ""}`}
                  aria-pressed={s.key === key}
                  onClick={() => {
                    setKey(s.key);
                    setIter(null);
                  }}
                >
                  <span className="mono">{s.key}</span> <Status status={s.status} />
                </button>
              </li>
            ))}
            {shown.length > upTo && (
              <li>
                <button type="button" className="btn small" data-action="more-instances" onClick={() => setUpTo((n) => n + 200)}>
                  Show {Math.min(200, shown.length - upTo)} more (of {shown.length - upTo} not shown)
                </button>
              </li>
            )}
          </ul>
        </>
      )}
      {latest && rounds.length > 1 && (
        <div className="iterations" role="group" aria-label={`Iterations of ${latest.key}`} data-iterations={rounds.length}>
          <span className="muted small">Iteration</span>
          {stepWindow(rounds.length, rounds.indexOf(current!)).map((i, j, shown) => {
            const r = rounds[i];
            return (
              <span key={r.key}>
                {j > 0 && <span className="sep" aria-hidden="true">{shown[j - 1] === i - 1 ? "· " : "… "}</span>}
                <button
                  type="button"
                  data-iteration={i + 1}
                  data-status={r.status}
                  className={`status-${r.status}`}
                  aria-pressed={r === current}
                  title={`Iteration ${i + 1}: ${r.status.replace(/_/g, " ")}`}
                  onClick={() => setIter(r === latest ? null : iterationOf(r))}
                >
                  {i + 1}
                  {r === latest ? " (current)" : ""}
                </button>
              </span>
            );
          })}
          {rounds.length > STEP_ALL && (
            <select
              aria-label="Go to iteration"
              value={iterationOf(current!)}
              onChange={(e) => {
                const r = rounds.find((x) => iterationOf(x) === Number(e.target.value));
                setIter(!r || r === latest ? null : iterationOf(r));
              }}
            >
              {rounds.map((r, i) => (
                <option key={r.key} value={iterationOf(r)}>
                  {i + 1} · {r.status.replace(/_/g, " ")}
                </option>
              ))}
            </select>
          )}
        </div>
      )}
      {current && (
        <div className="instance" data-iteration={iterationOf(current) + 1}>
          <h3 className="mono">
            {current.key}
            {rounds.length > 1 && (
              <span className="muted">
                {" "}
                · iteration {iterationOf(current) + 1} of {rounds.length}
                {isLatest ? "" : " (earlier)"}
              </span>
            )}
          </h3>
          <dl className="kv">
            <dt>Status</dt>
            <dd>
              <Status status={current.status} />
              {byHand && (
                <span className="by-hand" data-by-hand>
                  {" "}
                  by hand{who(byHand.payload?.by) ? ` by ${who(byHand.payload?.by)}` : ""}, when it was {String(byHand.payload?.from ?? "?").replace(/_/g, " ")}
                </span>
              )}
            </dd>
            <dt>Attempt</dt>
            <dd>
              {current.attempt}
              {current.worker && (
                <span className="muted" data-attempt-worker>
                  {" "}
                  · taken by <span className="mono">{current.worker}</span>
                </span>
              )}
            </dd>
            <dt>Started</dt>
            <dd title={current.started_at ?? ""}>{ago(current.started_at)}</dd>
            <dt>Finished</dt>
            <dd title={current.finished_at ?? ""}>{current.finished_at ? ago(current.finished_at) : "—"}</dd>
            {current.status === "sleeping" && current.wake_at && (
              <>
                <dt>Wakes</dt>
                <dd data-wake>
                  <Countdown at={current.wake_at} before="wakes in" due="waking now…" className="countdown" />
                  <div className="muted small">{new Date(current.wake_at).toLocaleString()}</div>
                </dd>
              </>
            )}
            {current.status === "waiting_for_event" && (
              <>
                <dt>Waiting</dt>
                <dd data-event-wait>{eventWaitText(current.event_name, current.event_key)}</dd>
              </>
            )}
            {current.status === "waiting_for_event" && current.deadline && (
              <>
                <dt>Deadline</dt>
                <dd data-deadline>
                  <Countdown at={current.deadline} before="fails in" due="timing out now…" className="countdown" />
                  <div className="muted small">{new Date(current.deadline).toLocaleString()}</div>
                </dd>
              </>
            )}
            {current.child_run_id && (
              <>
                <dt>Child run</dt>
                <dd data-child-run={current.child_run_id}>
                  <ChildRun id={current.child_run_id} refresh={current.status} />
                </dd>
              </>
            )}
            {current.status === "completed" && String(current.type).toLowerCase() === "http" && typeof outputOf(current)?.status === "number" && (
              <>
                <dt>Response</dt>
                <dd data-http-response>HTTP {outputOf(current)?.status}</dd>
              </>
            )}
            {current.status === "waiting_for_user" && current.deadline && (
              <>
                <dt>Deadline</dt>
                <dd data-deadline>
                  <Countdown at={current.deadline} before="times out in" due="timing out now…" className="countdown" />
                  <div className="muted small">{new Date(current.deadline).toLocaleString()}</div>
                </dd>
              </>
            )}
            {current.status === "waiting_for_user" && props.remindAfter > 0 && (
              <>
                <dt>Reminders</dt>
                <dd data-remind>
                  every {span(props.remindAfter * 1000)} while it waits
                  {(() => {
                    const n = nodeEvents.filter((e) => e.type === "node.reminder").length;
                    return n ? ` · ${n} sent` : " · none sent yet";
                  })()}
                </dd>
              </>
            )}
            {Array.isArray(current.taken) && (
              <>
                <dt>Took</dt>
                <dd className="mono" data-taken-list>
                  {current.taken.length ? current.taken.map((t) => `→ ${t}`).join(", ") : "no edge"}
                </dd>
              </>
            )}
            {outputOf(current)?.decision?.outcome && (
              <>
                <dt>Decision</dt>
                <dd>
                  <strong>{String(outputOf(current)?.decision.outcome)}</strong>
                  {who(outputOf(current)?.decision.by) ? ` by ${who(outputOf(current)?.decision.by)}` : ""}
                  {outputOf(current)?.decision.comment ? ` — “${outputOf(current)?.decision.comment}”` : ""}
                </dd>
              </>
            )}
          </dl>
          {current.status === "skipped" && <p className="muted small">Skipped: none of the edges into this step was taken, so it did not run.</p>}
          {current.status === "sleeping" && (
            <p className="muted small">Sleeping: this Wait step goes on with its input when its time comes. Cancelling the run ends the wait.</p>
          )}
          {current.status === "waiting_for_event" && isLatest && props.operate && (
            <PostEvent key={current.key} name={current.event_name ?? ""} eventKey={current.event_key ?? ""} onDone={props.onAnswered} />
          )}
          {current.status === "failed" && isLatest && props.operate && (
            <button type="button" className="btn primary" onClick={() => void props.onRetry(current.key)}>
              {isCollector ? "Retry gather" : `Retry ${current.key}`}
            </button>
          )}
          {isCollector && isLatest && props.operate && (current.status === "pending" || current.status === "running") && (
            // Retrying a gather that has not failed does nothing: it fires
            // by itself once its items have arrived. Say so, rather than
            // offer a button that answers 409.
            <p className="muted small" data-retry-gather="waiting">
              <button type="button" className="btn small" disabled title="Only a failed gather can be retried">
                Retry gather
              </button>{" "}
              Still gathering: it goes on by itself once every item has arrived. Retry a failed item instead.
            </p>
          )}
          {current && isLatest && props.operate && RERUNNABLE.includes(current.status) && props.runStatus !== "cancelled" && !props.loop && (
            <Rerun key={`${current.key}-${current.attempt}`} runId={runId} state={current} onDone={props.onAnswered} />
          )}
          {canSkip && props.operate && <CompleteByHand key={current.key} runId={runId} nodeKey={current.key} status={current.status} runStatus={props.runStatus} onDone={props.onAnswered} />}
          {current.status === "waiting_for_user" && isLatest && props.decideHere && (
            <Answer key={`${current.key}-${current.attempt}`} runId={runId} nodeKey={current.key} outcomes={props.outcomes} form={props.form ?? null} onDone={props.onAnswered} />
          )}
          {current.status === "waiting_for_user" && isLatest && !props.decideHere && currentMe().me?.role === "approver" && (
            <p className="muted small">
              Decide this step in the <Link to="/approvals">approvals inbox</Link>.
            </p>
          )}
          {(props.nodeType === "Collector" || current.type === "Collector") && Array.isArray(outputOf(current)?.errors) && outputOf(current)?.errors.length > 0 && (
            <ToleratedFailures errors={outputOf(current)?.errors} total={Array.isArray(outputOf(current)?.items) ? outputOf(current)?.items.length : null} />
          )}
          {current.error && (
            <>
              <h3>Error</h3>
              <pre className="json error-text">{current.error}</pre>
            </>
          )}
          <h3>Input</h3>
          <Json value={current.input} label="input" />
          <h3>Output</h3>
          <Json value={current.output} label="output" />
          <h3>Events</h3>
          {nodeEvents.length === 0 ? (
            <p className="muted">No events yet.</p>
          ) : (
            <ol className="events">
              {nodeEvents.map((e) => (
                <EventItem key={e.id} e={e} />
              ))}
            </ol>
          )}
        </div>
      )}
    </div>
  );
}

// refusal is the server's reason for refusing an action, without the
// "conflict: " its 409 messages begin with.
function refusal(err: unknown): string {
  const msg = describe(err);
  return err instanceof ApiError && err.code === "conflict" ? msg.replace(/^conflict: /, "") : msg;
}

// The run statuses a run is migrated from (POST /runs/{id}/migrate).
const MIGRATABLE: Run["status"][] = ["running", "paused", "failed"];

// Migrate moves a run onto another version of its flow (POST
// /runs/{id}/migrate {"version": n}), picked from the flow's versions; a
// refusal (409) is shown with the server's words and, when the version
// lacks steps the run has started, their list.
function Migrate(props: {
  run: Run;
  versions: Version[];
  current: number | null;
  onClose: () => void;
  onDone: (r: Run, version: number) => void;
  onRefused: () => void;
}) {
  const { run, versions, current } = props;
  const others = [...versions].sort((a, b) => b.number - a.number).filter((v) => v.number !== current);
  const [pick, setPick] = useState<string>(others[0] ? String(others[0].number) : "");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [missing, setMissing] = useState<string[]>([]);

  async function send(e: FormEvent) {
    e.preventDefault();
    const n = Number(pick);
    if (!n) return;
    setBusy(true);
    setError(null);
    setMissing([]);
    try {
      const r = await api<Run>("POST", `/runs/${run.id}/migrate`, { version: n });
      props.onDone(r, n);
    } catch (err) {
      setError(`Not migrated: ${refusal(err)}`);
      const m = err instanceof ApiError ? err.info.missing_nodes : undefined;
      setMissing(Array.isArray(m) ? m.map(String) : []);
      props.onRefused();
    } finally {
      setBusy(false);
    }
  }

  return (
    <form className="migrate-form" aria-label="Migrate this run" onSubmit={send}>
      <h3>Migrate to another version</h3>
      <p className="small">
        The run goes on under the version you pick{current ? ` instead of v${current}` : ""}: steps already done keep their results, steps that version adds start
        when what they wait for is done, and steps it drops are removed if they never started. Every step the run has started must be in that version, with the same
        type.
      </p>
      {others.length === 0 ? (
        <p className="muted" data-no-versions>
          This flow has no other version. Save a change to the flow to make one.
        </p>
      ) : (
        <div className="row">
          <label htmlFor="migrate-version">Version</label>
          <select
            id="migrate-version"
            value={pick}
            disabled={busy}
            onChange={(e) => {
              setPick(e.target.value);
              setError(null);
              setMissing([]);
            }}
          >
            {others.map((v) => (
              <option key={v.id} value={v.number}>
                v{v.number}
                {v.message ? ` — ${v.message}` : ""} ({ago(v.created_at)})
              </option>
            ))}
          </select>
          <button type="submit" className="btn primary" data-action="confirm-migrate" disabled={busy || !pick}>
            {busy ? "Migrating…" : `Migrate to v${pick}`}
          </button>
          <button type="button" className="btn" disabled={busy} onClick={props.onClose}>
            Cancel
          </button>
        </div>
      )}
      {error && (
        <div className="field-error" role="alert" data-server-error>
          <p>{error}</p>
          {missing.length > 0 && (
            <>
              <p>
                v{pick} lacks {missing.length === 1 ? "this step" : "these steps"} the run has started (or has {missing.length === 1 ? "it" : "them"} as another type or in
                another parallel branch):
              </p>
              <ul className="missing-nodes" data-missing-nodes aria-label="Missing steps">
                {missing.map((m) => (
                  <li key={m} className="mono">
                    {m}
                  </li>
                ))}
              </ul>
            </>
          )}
        </div>
      )}
    </form>
  );
}

// ToleratedFailures lists the items a Collector with toleratedFailures
// fired without (its output's errors: [{index, key, error}]); each is
// null at its index in the output's items.
function ToleratedFailures({ errors, total }: { errors: { index?: unknown; key?: unknown; error?: unknown }[]; total: number | null }) {
  return (
    <div className="tolerated" data-tolerated-failures={errors.length}>
      <h3>Tolerated failures</h3>
      <p className="small muted">
        {errors.length} {errors.length === 1 ? "item" : "items"}
        {total !== null ? ` of ${total}` : ""} failed within the tolerance: the Collector fired with null at {errors.length === 1 ? "its index" : "their indexes"}.
      </p>
      <table className="table compact">
        <thead>
          <tr>
            <th scope="col">Index</th>
            <th scope="col">Key</th>
            <th scope="col">Error</th>
          </tr>
        </thead>
        <tbody>
          {errors.slice(0, 500).map((e, i) => (
            <tr key={`${String(e.key)}-${i}`} data-index={String(e.index)}>
              <td>{String(e.index ?? "")}</td>
              <td className="mono">{String(e.key ?? "")}</td>
              <td className="tolerated-error">{String(e.error ?? "")}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {errors.length > 500 && <p className="muted small">…and {errors.length - 500} more (all in the output below).</p>}
    </div>
  );
}

// The finished node statuses a node is re-run from (POST …/rerun).
const RERUNNABLE = ["completed", "failed", "skipped", "cancelled"];

// Rerun re-runs a finished step and every step after it (POST
// …/nodes/{key}/rerun) as a new attempt, with its input as it was or as
// the person edits it (JSON); a refusal (409) is shown with the server's
// words.
function Rerun({ runId, state, onDone }: { runId: string; state: NodeState; onDone: () => void }) {
  const original = JSON.stringify(state.input ?? null, null, 2);
  const [open, setOpen] = useState(false);
  const [text, setText] = useState(original);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const parsed = parseOutput(text);
  const changed = parsed.ok && JSON.stringify(parsed.value) !== JSON.stringify(state.input ?? null);
  const id = `rerun-input-${state.key}`;

  async function send(e: FormEvent) {
    e.preventDefault();
    if (!parsed.ok) return;
    setBusy(true);
    setError(null);
    try {
      await api("POST", `/runs/${runId}/nodes/${encodeURIComponent(state.key)}/rerun`, changed ? { input: parsed.value } : {});
      setOpen(false);
      onDone();
    } catch (err) {
      setError(`Not re-run: ${refusal(err)}`);
      onDone();
    } finally {
      setBusy(false);
    }
  }

  if (!open)
    return (
      <div className="node-actions">
        <button
          type="button"
          className="btn"
          data-action="rerun"
          title="Run this step again, and every step after it"
          onClick={() => {
            setText(original);
            setError(null);
            setOpen(true);
          }}
        >
          Re-run from here…
        </button>
        {error && (
          <p className="field-error" role="alert" data-server-error>
            {error}
          </p>
        )}
      </div>
    );
  return (
    <form className="rerun-form" aria-label={`Re-run ${state.key}`} onSubmit={send}>
      <h3>Re-run {state.key} from here</h3>
      <p className="small">
        This resets {state.key} and every step after it, and runs it again as attempt {state.attempt + 1}. What the earlier attempt did stays in the events.
      </p>
      <label htmlFor={id}>Input (JSON)</label>
      <textarea
        id={id}
        className="mono"
        rows={Math.min(12, Math.max(3, original.split("\n").length))}
        spellCheck={false}
        value={text}
        disabled={busy}
        aria-invalid={!parsed.ok}
        aria-describedby={`${id}-help`}
        onChange={(e) => {
          setText(e.target.value);
          setError(null);
        }}
      />
      {parsed.ok ? (
        <p id={`${id}-help`} className="muted small" data-input-note>
          {changed ? "Runs with this input instead of the one it had." : "Runs with the input it had; edit it to run with another."}
        </p>
      ) : (
        <p id={`${id}-help`} className="field-error" role="alert" data-json-error>
          Not valid JSON: {parsed.message}
        </p>
      )}
      {error && (
        <p className="field-error" role="alert" data-server-error>
          {error}
        </p>
      )}
      <div className="row-buttons">
        <button type="submit" className="btn primary" data-action="confirm-rerun" disabled={busy || !parsed.ok}>
          {busy ? "Re-running…" : `Re-run ${state.key}`}
        </button>
        <button type="button" className="btn" disabled={busy} onClick={() => setOpen(false)}>
          Cancel
        </button>
      </div>
    </form>
  );
}

// The node statuses a person can complete by hand (POST …/skip).
const SKIPPABLE = ["failed", "running", "waiting_for_user", "sleeping", "waiting_for_event"];

// What completing a step by hand does, by the step's status.
const SKIP_EFFECT: Record<string, string> = {
  failed: "marks this failed step completed instead of retrying it",
  running: "marks this step completed now; if its worker answers later, the answer is ignored",
  waiting_for_user: "completes this step without anyone's answer; it leaves the approvals inbox",
  sleeping: "ends this wait now",
  waiting_for_event: "ends this wait for an event now; the event, if it comes later, completes nothing here",
};

// parseOutput reads the optional output a person typed: empty is no
// output (null); anything else must be JSON.
function parseOutput(text: string): { ok: true; value: unknown } | { ok: false; message: string } {
  const t = text.trim();
  if (!t) return { ok: true, value: null };
  try {
    return { ok: true, value: JSON.parse(t) };
  } catch (err) {
    return { ok: false, message: err instanceof Error ? err.message : String(err) };
  }
}

// CompleteByHand completes a stuck step by hand (POST …/nodes/{key}/skip)
// with an optional JSON output, after the person confirms what it does.
function CompleteByHand(props: { runId: string; nodeKey: string; status: string; runStatus: Run["status"]; onDone: () => void }) {
  const { runId, nodeKey, status } = props;
  const [open, setOpen] = useState(false);
  const [text, setText] = useState("");
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const parsed = parseOutput(text);
  const id = `skip-output-${nodeKey}`;

  async function send() {
    if (!parsed.ok) return;
    setBusy(true);
    setError(null);
    try {
      await api("POST", `/runs/${runId}/nodes/${encodeURIComponent(nodeKey)}/skip`, parsed.value === null ? {} : { output: parsed.value });
      setOpen(false);
      setConfirming(false);
      props.onDone();
    } catch (err) {
      setError(`Not completed: ${refusal(err)}`);
      setConfirming(false);
    } finally {
      setBusy(false);
    }
  }

  if (!open)
    return (
      <button type="button" className="btn" data-action="complete-by-hand" onClick={() => setOpen(true)}>
        Complete by hand…
      </button>
    );
  return (
    <form
      className="by-hand-form"
      aria-label={`Complete ${nodeKey} by hand`}
      data-step={confirming ? "confirm" : "edit"}
      onSubmit={(e: FormEvent) => {
        e.preventDefault();
        if (confirming) void send();
        else if (parsed.ok) setConfirming(true);
      }}
    >
      <h3>Complete {nodeKey} by hand</h3>
      <p className="small">
        This {SKIP_EFFECT[status] ?? "completes this step"}, and the run goes on to the next steps with the output below as this step's output.
        {props.runStatus === "paused" ? " The run is paused: the next steps start when it is resumed." : ""}
      </p>
      <label htmlFor={id}>Output (JSON, optional)</label>
      <textarea
        id={id}
        className="mono"
        rows={4}
        autoFocus
        placeholder='{"fixed": true}'
        value={text}
        disabled={confirming || busy}
        aria-invalid={!parsed.ok}
        aria-describedby={`${id}-help`}
        onChange={(e) => {
          setText(e.target.value);
          setError(null);
        }}
      />
      {parsed.ok ? (
        <p id={`${id}-help`} className="muted small">
          {text.trim() ? "Valid JSON." : "Left empty, the step's output is null."}
        </p>
      ) : (
        <p id={`${id}-help`} className="field-error" role="alert" data-json-error>
          Not valid JSON: {parsed.message}
        </p>
      )}
      {error && (
        <p className="field-error" role="alert" data-server-error>
          {error}
        </p>
      )}
      {confirming ? (
        <div className="confirm" role="group" aria-label="Confirm">
          <p>
            <strong>
              Complete {nodeKey} by hand with {parsed.ok && parsed.value !== null ? "this output" : "no output"}?
            </strong>{" "}
            This cannot be undone; it is recorded as done by you.
          </p>
          {parsed.ok && parsed.value !== null && <pre className="json">{JSON.stringify(parsed.value, null, 2)}</pre>}
          <div className="row-buttons">
            <button type="submit" className="btn primary" data-action="confirm-complete" disabled={busy} autoFocus>
              {busy ? "Completing…" : `Yes, complete ${nodeKey}`}
            </button>
            <button type="button" className="btn" disabled={busy} onClick={() => setConfirming(false)}>
              Back
            </button>
          </div>
        </div>
      ) : (
        <div className="row-buttons">
          <button type="submit" className="btn primary" data-action="review-complete" disabled={!parsed.ok}>
            Complete by hand…
          </button>
          <button
            type="button"
            className="btn"
            onClick={() => {
              setOpen(false);
              setError(null);
            }}
          >
            Cancel
          </button>
        </div>
      )}
    </form>
  );
}

// A loop's iterations are all listed up to STEP_ALL; beyond, the first,
// the last few and the one shown (a select reaches the others).
const STEP_ALL = 12;

function stepWindow(n: number, at: number): number[] {
  if (n <= STEP_ALL) return Array.from({ length: n }, (_, i) => i);
  const keep = new Set([0, at, ...Array.from({ length: 8 }, (_, i) => n - 8 + i)]);
  return [...keep].filter((i) => i >= 0 && i < n).sort((a, b) => a - b);
}

// TASK_EVENTS are a task's own events, worded as the task page words them.
const TASK_EVENTS = new Set(["node.claimed", "node.unclaimed", "node.reassigned", "node.delegated", "node.escalated", "approval.vote", "approval.decided_for"]);

function eventSummary(e: StreamEvent): string {
  const p = e.payload ?? {};
  // A task's events in business language ("ann@example.com claimed it").
  if (TASK_EVENTS.has(e.type)) {
    const t = taskEventText(e);
    if (t) return t;
  }
  if (e.type === "loop.iteration") {
    const n = Number(p.iteration ?? 0);
    return `${e.key ?? "the loop's source"} went back to ${p.head ?? "the loop's head"} (edge ${p.loop ?? "?"}): iteration ${n + 1} begins`;
  }
  if (e.type === "node.completed_by_hand") return `by ${who(p.by) || "someone"}, when it was ${String(p.from ?? "?").replace(/_/g, " ")}`;
  if (e.type === "node.rerun") {
    const n = Number(p.reset ?? 0);
    return `by ${who(p.by) || "someone"} · attempt ${p.attempt ?? "?"}${n ? ` · ${n} ${n === 1 ? "step" : "steps"} reset` : ""}`;
  }
  if (e.type === "run.paused") {
    const n = Number(p.held_dispatches ?? 0);
    return `nothing new starts until it is resumed${n ? ` · ${n} ${n === 1 ? "dispatch" : "dispatches"} held` : ""}`;
  }
  if (e.type === "node.log") return `${e.key ?? ""}: ${String(p.message ?? "")}${p.data !== undefined ? ` · ${truncate(JSON.stringify(p.data), 160)}` : ""}`;
  if (e.type === "run.queued") return `waits behind run ${typeof p.behind === "string" ? p.behind : "?"} of its entity`;
  if (e.type === "run.unpaused") {
    const n = Number(p.released_dispatches ?? 0);
    return `what became ready starts now${n ? ` · ${n} held ${n === 1 ? "dispatch" : "dispatches"} sent` : ""}`;
  }
  if (e.type === "run.migrated") {
    const added = Number(p.added ?? 0);
    const dropped = Number(p.dropped ?? 0);
    return `to version ${p.version ?? "?"}${who(p.by) ? ` by ${who(p.by)}` : ""}${added ? ` · ${added} ${added === 1 ? "step" : "steps"} added` : ""}${dropped ? ` · ${dropped} dropped` : ""}`;
  }
  const parts: string[] = [];
  if (p.status) parts.push(p.status);
  if (p.attempt) parts.push(`attempt ${p.attempt}`);
  if (p.try) parts.push(`try ${p.try}`);
  if (p.delivered !== undefined) parts.push(p.delivered ? "delivered" : "not delivered");
  if (p.status_code) parts.push(`HTTP ${p.status_code}`);
  if (p.error) parts.push(String(p.error));
  if (p.to_section_id) parts.push(`→ ${p.to_section_id}`);
  if (e.type === "approval.timed_out") parts.push(`no answer in time → ${p.on_timeout && p.on_timeout !== "fail" ? p.on_timeout : "fail"}`);
  if (p.wake_at) parts.push(`wakes ${new Date(p.wake_at).toLocaleString()}`);
  if (p.child_run_id) parts.push(`run ${p.child_run_id}`);
  return parts.join(" · ");
}

function who(by: unknown): string {
  if (typeof by === "string") return by;
  if (by && typeof by === "object") {
    const o = by as Record<string, unknown>;
    return String(o.name ?? o.email ?? o.id ?? "");
  }
  return "";
}

// PostEvent posts the event a waiting Event step waits for (POST
// /api/v1/events): its name and key, filled in, and an optional JSON
// payload, which becomes the step's output.
function PostEvent({ name: initialName, eventKey, onDone }: { name: string; eventKey: string; onDone: () => void }) {
  const [name, setName] = useState(initialName);
  const [key, setKey] = useState(eventKey);
  const [text, setText] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [result, setResult] = useState<{ delivered: number; duplicate: boolean; kept: boolean } | null>(null);
  const parsed = parseOutput(text);

  async function send() {
    if (!parsed.ok || !name.trim() || !key) return;
    setBusy(true);
    setError(null);
    setResult(null);
    try {
      const body: Record<string, unknown> = { name: name.trim(), key };
      if (parsed.value !== null) body.payload = parsed.value;
      const r = await api<{ id: string; delivered: number; duplicate: boolean; kept: boolean }>("POST", "/events", body);
      setResult(r);
      onDone();
    } catch (err) {
      setError(`Not posted: ${describe(err)}`);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form
      className="post-event"
      aria-label="Post this event"
      onSubmit={(e: FormEvent) => {
        e.preventDefault();
        void send();
      }}
    >
      <h3>Post this event</h3>
      <p className="small muted">Sends the event this step waits for, as your system would with POST /api/v1/events. Every step waiting on this name and key completes with the payload.</p>
      <div className="row">
        <label htmlFor="event-name" className="sr-only">
          Event name
        </label>
        <input id="event-name" className="mono" value={name} onChange={(e) => setName(e.target.value)} aria-label="Event name" />
        <label htmlFor="event-key" className="sr-only">
          Key
        </label>
        <input id="event-key" className="mono" value={key} onChange={(e) => setKey(e.target.value)} aria-label="Key" />
      </div>
      <label htmlFor="event-payload">Payload (JSON, optional)</label>
      <textarea
        id="event-payload"
        className="mono"
        rows={3}
        placeholder='{"amount": 120}'
        value={text}
        aria-invalid={!parsed.ok}
        onChange={(e) => {
          setText(e.target.value);
          setResult(null);
        }}
      />
      {!parsed.ok && (
        <p className="field-error" role="alert" data-json-error>
          Not valid JSON: {parsed.message}
        </p>
      )}
      {error && (
        <p className="field-error" role="alert" data-server-error>
          {error}
        </p>
      )}
      {result && (
        <p className="banner ok" role="status" data-event-result={result.delivered}>
          {result.duplicate
            ? "Already posted (same id): nothing delivered twice."
            : result.delivered
              ? `Delivered to ${result.delivered} waiting step${result.delivered === 1 ? "" : "s"}.`
              : "No step was waiting on it: kept for the first wait on this name and key."}
        </p>
      )}
      <button type="submit" className="btn primary" data-action="post-event" disabled={busy || !parsed.ok || !name.trim() || !key}>
        {busy ? "Posting…" : "Post event"}
      </button>
    </form>
  );
}

// useRunLabel reads a run and its flow's name, to name it for a person;
// again when refresh changes.
function useRunLabel(runId: string, refresh = ""): { run: Run | null; flowName: string | null } {
  const [run, setRun] = useState<Run | null>(null);
  const [flowName, setFlowName] = useState<string | null>(null);
  useEffect(() => {
    let gone = false;
    api<Run>("GET", `/runs/${runId}`).then(
      (r) => {
        if (gone) return;
        setRun(r);
        api<Flow>("GET", `/flows/${r.flow_id}`).then(
          (f) => !gone && setFlowName(f.name),
          () => undefined,
        );
      },
      () => undefined,
    );
    return () => {
      gone = true;
    };
  }, [runId, refresh]);
  return { run, flowName };
}

// MeasureUnsized, inside a ReactFlow, has React Flow measure again the
// nodes it holds without a size. A node is hidden until measured, and its
// ResizeObserver reports only a change of size: a node rebuilt without its
// size (the canvas is rebuilt as the run moves) could stay hidden for good,
// the view never fitted and a click on it falling through to the pane
// (seen in the sub-flow test: every node hidden 30 s on).
function MeasureUnsized() {
  const unsized = useStore((s) => {
    const ids: string[] = [];
    for (const n of s.nodeLookup.values()) if (!n.hidden && (n.measured.width === undefined || n.measured.height === undefined)) ids.push(n.id);
    return ids.join("\n");
  });
  const measure = useUpdateNodeInternals();
  useEffect(() => {
    if (unsized) measure(unsized.split("\n"));
  }, [unsized, measure]);
  return null;
}

// ChildRun links to the run a SubFlow step started, with its flow and
// status (read again when the step's status changes).
function ChildRun({ id, refresh }: { id: string; refresh: string }) {
  const { run, flowName } = useRunLabel(id, refresh);
  return (
    <>
      <Link to={`/runs/${id}`} className="child-run-link" data-link="child-run" title="Open the run this step started">
        {flowName ? `${flowName} run` : "Child run"} →
      </Link>
      {run && (
        <>
          {" "}
          <Status status={run.status} />
        </>
      )}
      {/* The whole id: runs started together share their first digits (UUIDv7). */}
      <div className="mono small muted">{id}</div>
    </>
  );
}

// ParentCrumb leads a sub-flow run back to the run and the SubFlow step
// that started it.
function ParentCrumb({ parentRunId, parentKey }: { parentRunId: string; parentKey: string }) {
  const { flowName } = useRunLabel(parentRunId);
  const to = `/runs/${parentRunId}${parentKey ? `?key=${encodeURIComponent(parentKey)}` : ""}`;
  return (
    <nav className="crumbs" aria-label="Parent run" data-parent-run={parentRunId} data-parent-key={parentKey}>
      <span className="muted">Sub-flow run of</span>{" "}
      <Link to={`/runs/${parentRunId}`} data-link="parent-run">
        {flowName ? `${flowName} run` : "a run"}
      </Link>{" "}
      <span className="mono small muted">{parentRunId}</span>
      {parentKey && (
        <>
          <span className="crumb-sep" aria-hidden="true">
            {" "}
            ›{" "}
          </span>
          <Link to={to} className="mono" data-link="parent-step">
            {parentKey}
          </Link>
        </>
      )}
    </nav>
  );
}

// stepsOf is a run's steps as a graph without edges, in the order they
// started, for a caller who may not read the flow.
function stepsOf(run: Run): FlowGraph {
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

// RunCanvas is a run's flow drawn read-only, as the run view draws it:
// each step with its label and status, the edges taken and not taken. A
// task page shows it; mark names the node to ring.
export function RunCanvas({ graph, run, mark }: { graph: FlowGraph; run: Run; mark?: string }) {
  const flowNodeTypes = useFlowNodeTypes();
  const [typesLoaded, setTypesLoaded] = useState(false);
  useEffect(() => {
    let cancelled = false;
    loadNodeTypes().then(
      () => !cancelled && setTypesLoaded(true),
      () => !cancelled && setTypesLoaded(true),
    );
    return () => {
      cancelled = true;
    };
  }, []);
  const canvas = useMemo(() => {
    const byNode: Record<string, NodeState[]> = {};
    const history: Record<string, NodeState[]> = {};
    for (const s of Object.values(run.nodes ?? {})) ((isHistory(s) ? history : byNode)[s.node_id] ??= []).push(s);
    const c = toCanvas(graph);
    const runDone = run.status !== "running" && run.status !== "paused" && run.status !== "queued";
    const nodes: CanvasNode[] = c.nodes.map((n) => ({
      ...n,
      draggable: false,
      connectable: false,
      selected: n.id === mark,
      data: { ...n.data, _run: aggregate(byNode[n.id] ?? []) },
    }));
    const edges: Edge[] = c.edges.map((e) => {
      const rounds = isLoop(e.data) ? (history[e.source] ?? []).filter((s) => Array.isArray(s.taken) && s.taken.includes(e.target)).length : 0;
      const taken = rounds ? true : edgeTaken(e, byNode[e.source], runDone);
      const cls = taken === true ? "edge-taken" : taken === false ? "edge-not-taken" : "edge-open";
      return {
        ...e,
        animated: taken === null && run.status === "running",
        className: `${e.className ?? ""} ${cls}`,
        domAttributes: { ...(e.domAttributes as any), "data-taken": taken === null ? "open" : String(taken) } as any,
        ariaLabel: `Edge from ${e.source} to ${e.target}${taken === true ? ", taken" : taken === false ? ", not taken" : ""}`,
      };
    });
    return { nodes, edges };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [graph, run, mark, flowNodeTypes, typesLoaded]);
  return (
    <div className="canvas task-canvas" data-task-canvas>
      <ReactFlowProvider>
        <ReactFlow
          colorMode="system"
          nodes={canvas.nodes}
          edges={canvas.edges}
          nodeTypes={flowNodeTypes}
          edgeTypes={edgeTypes}
          nodesDraggable={false}
          nodesConnectable={false}
          elementsSelectable={false}
          minZoom={0.1}
          proOptions={{ hideAttribution: true }}
        >
          <FitOnOpen />
          <Background gap={16} />
          <Controls showInteractive={false} />
        </ReactFlow>
      </ReactFlowProvider>
      <Legend />
    </div>
  );
}
