// useGraphEdits is how the editor changes the graph on the canvas: steps
// added, connected, edited, renamed and deleted, edges edited, selected
// and deleted, the layout tidied up and that undone. Each change marks the
// flow edited; a field or edge edited since the last save marks that
// save's problems about it stale.
import { addEdge, useReactFlow, type Connection, type Edge } from "@xyflow/react";
import { useCallback, useRef, type Dispatch, type RefObject, type SetStateAction } from "react";
import type { Problem } from "../../api";
import { useFitFlow } from "../../components/FitOnOpen";
import { decorateEdge, nextId, NODE_MAX, type CanvasNode } from "../../graph";
import { typeInfo } from "../../nodetypes";
import { renameStepRefs } from "../../renameRefs";
import { tidy } from "../../tidy";
import { freeSpot } from "./freeSpot";

// ADDED_ZOOM_FLOOR: the least zoom the view goes to by itself to show a
// new node with the rest of the flow (below it, the view goes to the node).
const ADDED_ZOOM_FLOOR = 0.5;

// panels counts the node panels opened, for their keys.
let panels = 0;

export function useGraphEdits({
  wrapper,
  nodes,
  edges,
  setNodes,
  setEdges,
  setProblems,
  markDirty,
}: {
  // wrapper: the canvas's element (a node added without a place goes in its middle).
  wrapper: RefObject<HTMLDivElement | null>;
  nodes: CanvasNode[];
  edges: Edge[];
  setNodes: Dispatch<SetStateAction<CanvasNode[]>>;
  setEdges: Dispatch<SetStateAction<Edge[]>>;
  setProblems: Dispatch<SetStateAction<(Problem & { stale?: boolean })[]>>;
  markDirty: () => void;
}) {
  const rf = useReactFlow();
  const nodesRef = useRef<CanvasNode[]>([]);
  nodesRef.current = nodes;
  const edgesRef = useRef<Edge[]>([]);
  edgesRef.current = edges;
  const fitFlow = useFitFlow();
  // A node's panel has a key of its own, which a renamed node keeps (and
  // so its fields and the focus): panelKeys maps node ids to those keys.
  const panelKeys = useRef<Record<string, string>>({});

  const addNode = useCallback(
    (type: string, screen: { x: number; y: number } | null) => {
      const r = wrapper.current?.getBoundingClientRect();
      const at = screen ?? (r ? { x: r.left + r.width / 2, y: r.top + r.height / 2 } : { x: 200, y: 200 });
      let pos = rf.screenToFlowPosition(at);
      const id = nextId(typeInfo(type)?.idPrefix || type.toLowerCase(), new Set(nodes.map((n) => n.id)));
      // A node added by click or keyboard goes in the visible pane, at the
      // free place nearest its centre: on top of no other node. The pane
      // full, it goes beside it, and the view follows it once it is drawn:
      // zoomed out to show the whole flow where that stays readable, else
      // moved to the new node at the same zoom (not back to the flow's
      // start, away from where the person was working).
      if (!screen && r) {
        const spot = freeSpot(pos, nodes, rf.screenToFlowPosition({ x: r.left, y: r.top }), rf.screenToFlowPosition({ x: r.right, y: r.bottom }));
        pos = spot;
        if (!spot.inPane)
          requestAnimationFrame(() =>
            requestAnimationFrame(() => {
              const b = rf.getNodesBounds(rf.getNodes());
              const zoom = rf.getZoom();
              const fits = Math.min(r.width / (b.width * 1.1), r.height / (b.height * 1.1));
              if (fits >= ADDED_ZOOM_FLOOR) void rf.fitView({ padding: 0.05, maxZoom: zoom });
              else void rf.setCenter(spot.x - 80 + NODE_MAX.width / 2, spot.y - 30 + NODE_MAX.height / 2, { zoom });
            }),
          );
      }
      // The data a new node starts with is its type's (GET /api/v1/node-types).
      const data: Record<string, any> = structuredClone(typeInfo(type)?.defaultConfig ?? {});
      setNodes((ns) => [
        ...ns.map((n) => ({ ...n, selected: false })),
        { id, type, position: { x: pos.x - 80, y: pos.y - 30 }, data, selected: true },
      ]);
      setEdges((es) => es.map((e) => ({ ...e, selected: false })));
      markDirty();
    },
    [nodes, rf, setNodes, setEdges, markDirty, wrapper],
  );

  const connect = useCallback(
    (c: Connection) => {
      if (!c.source || !c.target || c.source === c.target) return;
      setEdges((es) => {
        if (es.some((e) => e.source === c.source && e.target === c.target)) return es;
        const id = nextId("e", new Set(es.map((e) => e.id)));
        return addEdge(decorateEdge({ ...c, id, data: {} } as Edge), es);
      });
      markDirty();
    },
    [setEdges, markDirty],
  );

  const updateNode = useCallback(
    (id: string, data: Record<string, any>) => {
      const before = nodesRef.current.find((n) => n.id === id)?.data ?? {};
      setNodes((ns) => ns.map((n) => (n.id === id ? { ...n, data } : n)));
      // A message about a field edited since the save is stale: shown in
      // the settings, no longer painted on the canvas.
      const edited = (p: Problem) => {
        const k = /\.data\.([A-Za-z0-9_]+)/.exec(p.path ?? "")?.[1];
        return !!k && JSON.stringify(before[k]) !== JSON.stringify(data[k]);
      };
      setProblems((ps) => (ps.some((p) => p.node_id === id && !p.stale && edited(p)) ? ps.map((p) => (p.node_id === id && edited(p) ? { ...p, stale: true } : p)) : ps));
      markDirty();
    },
    [setNodes, markDirty, setProblems],
  );
  // A renamed node's references (steps.<id> in every node's and edge's
  // data) are renamed with it; renameNode answers how many.
  const renameNode = useCallback(
    (from: string, to: string): number => {
      const k = panelKeys.current;
      if (k[from]) k[to] = k[from];
      delete k[from];
      // Rewritten once, from the graph as shown: the count said is of
      // what was rewritten.
      let count = 0;
      const refs = <T,>(d: T): T => {
        if (!d) return d;
        const r = renameStepRefs(d, from, to);
        count += r.count;
        return r.value;
      };
      setNodes(nodesRef.current.map((n) => ({ ...n, id: n.id === from ? to : n.id, data: refs(n.data) })));
      setEdges(
        edgesRef.current.map((e) => {
          const data = refs(e.data);
          const moved = { ...e, source: e.source === from ? to : e.source, target: e.target === from ? to : e.target };
          return data === e.data ? moved : decorateEdge({ ...moved, data });
        }),
      );
      setProblems((ps) => ps.map((p) => (p.node_id === from ? { ...p, node_id: to } : p)));
      markDirty();
      return count;
    },
    [setNodes, setEdges, markDirty, setProblems],
  );
  const deleteNode = useCallback(
    (id: string) => {
      setNodes((ns) => ns.filter((n) => n.id !== id));
      setEdges((es) => es.filter((e) => e.source !== id && e.target !== id));
      markDirty();
    },
    [setNodes, setEdges, markDirty],
  );
  const updateEdge = useCallback(
    (id: string, data: Record<string, any>) => {
      setEdges((es) => es.map((e) => (e.id === id ? decorateEdge({ ...e, data }) : e)));
      setProblems((ps) => (ps.some((p) => p.edge_id === id && !p.stale) ? ps.map((p) => (p.edge_id === id ? { ...p, stale: true } : p)) : ps));
      markDirty();
    },
    [setEdges, markDirty, setProblems],
  );
  // Renaming a UX outcome renames it on the node's outcome edges too.
  const renameOutcome = useCallback(
    (node: string, from: string, to: string) => {
      if (from === to) return;
      setEdges((es) =>
        es.map((e) => (e.source === node && (e.data as any)?.outcome === from ? decorateEdge({ ...e, data: { ...e.data, outcome: to } }) : e)),
      );
    },
    [setEdges],
  );
  const selectEdge = useCallback(
    (id: string) => {
      setNodes((ns) => ns.map((n) => (n.selected ? { ...n, selected: false } : n)));
      setEdges((es) => es.map((e) => ({ ...e, selected: e.id === id })));
    },
    [setNodes, setEdges],
  );
  const deleteEdge = useCallback(
    (id: string) => {
      setEdges((es) => es.filter((e) => e.id !== id));
      markDirty();
    },
    [setEdges, markDirty],
  );
  const selectNode = useCallback(
    (id: string) => {
      setNodes((ns) => ns.map((n) => ({ ...n, selected: n.id === id })));
      setEdges((es) => es.map((e) => ({ ...e, selected: false })));
      const n = rf.getNode(id);
      if (n) rf.setCenter(n.position.x + 80, n.position.y + 30, { duration: 200, zoom: rf.getZoom() });
    },
    [rf, setNodes, setEdges],
  );

  // Tidy up: lay the graph out left to right (tidy.ts), as one change
  // (Undo takes it back: useGraphHistory).
  const tidyUp = useCallback(() => {
    const ns = nodesRef.current;
    if (!ns.length) return;
    const at = tidy(ns, edges);
    setNodes((cur) => cur.map((n) => (at[n.id] ? { ...n, position: at[n.id] } : n)));
    markDirty();
    requestAnimationFrame(() => fitFlow());
  }, [edges, setNodes, markDirty, fitFlow]);

  // panelKey is the key of a node's panel.
  const panelKey = (id: string) => (panelKeys.current[id] ??= `${id}#${++panels}`);

  return {
    panelKey,
    addNode,
    connect,
    updateNode,
    renameNode,
    deleteNode,
    updateEdge,
    renameOutcome,
    selectEdge,
    deleteEdge,
    selectNode,
    tidyUp,
  };
}
