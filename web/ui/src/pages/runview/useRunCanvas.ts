// useRunCanvas is the run's canvas: the graph's nodes with their
// instances' status, the edges taken and not taken, and the rows by node.
import type { Edge, NodeChange } from "@xyflow/react";
import { useCallback, useMemo, useRef, type RefObject } from "react";
import type { FlowGraph, NodeState, Run, StreamEvent } from "../../api";
import { isCompensation, isLoop, loopsOf, toCanvas, type CanvasNode } from "../../graph";
import { aggregate, cmpIndex, compensationEdge, edgeTaken, isHistory, iterationOf } from "./runState";

export function useRunCanvas({
  run,
  shownGraph,
  selected,
  flowNames,
  flowNodeTypes,
  events,
  eventCount,
}: {
  run: Run | null;
  shownGraph: FlowGraph | null;
  selected: string | null;
  flowNames: Record<string, string>;
  // flowNodeTypes: the canvas is built again once the node types loaded.
  flowNodeTypes: unknown;
  events: RefObject<StreamEvent[]>;
  eventCount: number;
}) {
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
  return { byNode, history, loops, onNodesChange, canvas };
}
