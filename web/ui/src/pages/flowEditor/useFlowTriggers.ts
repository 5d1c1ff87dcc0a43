// useFlowTriggers is the flow's triggers, drawn as start nodes left of its
// first steps (not part of the graph: never saved); a click opens one's
// settings.
import type { Edge } from "@xyflow/react";
import { useCallback, useEffect, useMemo, useState } from "react";
import { api, type Trigger } from "../../api";
import { TRIGGER_PREFIX, TRIGGER_SIZE } from "../../components/TriggerNode";
import { isCompensation, isLoop, type CanvasNode } from "../../graph";
import { triggerTitle } from "../Triggers";

// selected: a node or an edge is selected (then no trigger is).
export function useFlowTriggers({ flowId, nodes, edges, selected }: { flowId: string | null; nodes: CanvasNode[]; edges: Edge[]; selected: boolean }) {
  const [triggers, setTriggers] = useState<Trigger[]>([]);
  const [triggerNotice, setTriggerNotice] = useState<string | null>(null);
  const [selectedTriggerId, setSelectedTrigger] = useState<string | null>(null);
  // triggersLoaded: the first answer (or refusal) came; the view is fitted
  // once their start nodes are drawn.
  const [triggersLoaded, setTriggersLoaded] = useState(false);
  const loadTriggers = useCallback(async () => {
    if (!flowId) return setTriggers([]);
    try {
      setTriggers((await api<{ triggers: Trigger[] }>("GET", `/flows/${flowId}/triggers`, undefined, undefined, { quiet: true })).triggers);
    } catch {
      setTriggers([]); // a reader without access to triggers sees the steps alone
    }
    setTriggersLoaded(true);
  }, [flowId]);
  useEffect(() => {
    void loadTriggers();
  }, [loadTriggers]);
  const selectedTrigger = selected ? undefined : triggers.find((t) => t.id === selectedTriggerId);
  const roots = useMemo(() => {
    const fed = new Set(edges.filter((e) => !isLoop(e.data as any) && !isCompensation(e.data as any)).map((e) => e.target));
    return nodes.filter((n) => !fed.has(n.id));
  }, [nodes, edges]);
  const triggerNodes = useMemo<CanvasNode[]>(() => {
    if (!triggers.length) return [];
    const first = roots.length ? roots : nodes;
    const x = Math.min(0, ...nodes.map((n) => n.position.x)) - TRIGGER_SIZE.width - 90;
    const y0 = first.length ? Math.min(...first.map((n) => n.position.y)) : 0;
    return triggers.map((t, i) => ({
      id: TRIGGER_PREFIX + t.id,
      type: "trigger",
      position: { x, y: y0 + i * (TRIGGER_SIZE.height + 30) },
      // Its size is fixed: given as measured, so React Flow keeps the
      // handle it measured (its changes are not kept in the graph's state).
      ...TRIGGER_SIZE,
      measured: TRIGGER_SIZE,
      data: { ...triggerTitle(t), enabled: (t as { enabled?: boolean }).enabled, triggerId: t.id },
      draggable: false,
      connectable: false,
      deletable: false,
      selectable: false,
      className: t.id === selectedTrigger?.id ? "selected-trigger" : undefined,
    }));
  }, [triggers, roots, nodes, selectedTrigger]);
  const triggerEdges = useMemo<Edge[]>(
    () =>
      triggers.flatMap((t) =>
        roots.map((r) => ({
          id: `${TRIGGER_PREFIX}${t.id}>${r.id}`,
          source: TRIGGER_PREFIX + t.id,
          target: r.id,
          selectable: false,
          deletable: false,
          focusable: false,
          className: "trigger-edge",
        })),
      ),
    [triggers, roots],
  );
  return { triggerNotice, setTriggerNotice, selectedTriggerId, setSelectedTrigger, triggersLoaded, loadTriggers, selectedTrigger, triggerNodes, triggerEdges };
}
