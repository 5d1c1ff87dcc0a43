// The run's canvas: the flow drawn read-only with each step's status and
// the edges taken and not taken.
import { Background, Controls, ReactFlow, ReactFlowProvider, useStore, useUpdateNodeInternals, type Edge } from "@xyflow/react";
import { useEffect, useMemo, useState } from "react";
import type { FlowGraph, NodeState, Run } from "../../api";
import { Status } from "../../components/common";
import { FitOnOpen } from "../../components/FitOnOpen";
import { edgeTypes } from "../../components/LoopEdge";
import { useFlowNodeTypes } from "../../components/StitchNode";
import { loadNodeTypes } from "../../nodetypes";
import { isLoop, toCanvas, type CanvasNode } from "../../graph";
import { aggregate, edgeTaken, isHistory } from "./runState";

// The node statuses, in the order a node goes through them, as the canvas
// paints them.
const LEGEND = ["pending", "running", "waiting_for_user", "sleeping", "waiting_for_event", "completed", "failed", "skipped", "cancelled"];

export function Legend() {
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

// MeasureUnsized, inside a ReactFlow, has React Flow measure again the
// nodes it holds without a size. A node is hidden until measured, and its
// ResizeObserver reports only a change of size: a node rebuilt without its
// size (the canvas is rebuilt as the run moves) could stay hidden for good,
// the view never fitted and a click on it falling through to the pane
// (seen in the sub-flow test: every node hidden 30 s on).
export function MeasureUnsized() {
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
