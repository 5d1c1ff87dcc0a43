import {
  addEdge,
  Background,
  Controls,
  MiniMap,
  ReactFlow,
  ReactFlowProvider,
  useEdgesState,
  useNodesState,
  useReactFlow,
  type Connection,
  type Edge,
} from "@xyflow/react";
import { useCallback, useEffect, useMemo, useRef, useState, type CSSProperties, type PointerEvent as RPointerEvent } from "react";
import { api, ApiError, can, currentMe, describe, download, type Flow, type FlowAnalytics, type Problem, type Trigger, type Version, type BoardListed } from "../api";
import { TRIGGER_PREFIX, TRIGGER_SIZE, TriggerNode } from "../components/TriggerNode";
import { ErrorBox, isNotFound, NotFound, Spinner } from "../components/common";
import { edgeTypes } from "../components/LoopEdge";
import { useFlowNames } from "../flows";
import { useFlowNodeTypes } from "../components/StitchNode";
import { loadNodeTypes, typeInfo, useNodeTypes, type NodeTypeInfo } from "../nodetypes";
import {
  decorateEdge,
  isCompensation,
  isLoop,
  fromCanvas,
  nextId,
  problemText,
  toCanvas,
  truncate,
  unmarkedCycles,
  type CanvasNode,
} from "../graph";
import { Link, navigate } from "../router";
import { UnsavedGuard } from "../components/UnsavedGuard";
import { FitOnOpen, useFitFlow } from "../components/FitOnOpen";
import { matchTypes, PaletteSearch } from "../components/PaletteSearch";
import { tidy } from "../tidy";
import { EdgeSettings } from "./EdgeSettings";
import { NodeSettings } from "./NodeSettings";
import { StartRunDialog } from "./StartRun";
import { TriggerPanel, triggerTitle } from "./Triggers";

interface Props {
  flowId: string | null;
  version?: string | null;
}

// withSettings is graph with the flow's settings, as a save sends it.
function withSettings(graph: ReturnType<typeof fromCanvas>, settings: Record<string, any>) {
  return Object.keys(settings).length ? { ...graph, settings } : graph;
}

export function FlowEditor(props: Props) {
  return (
    <ReactFlowProvider>
      <Editor {...props} />
    </ReactFlowProvider>
  );
}

// panels counts the node panels opened, for their keys.
let panels = 0;

type BoardSummary = BoardListed;

function Editor({ flowId, version }: Props) {
  const rf = useReactFlow();
  const flowNodeTypes = useFlowNodeTypes();
  const types = useNodeTypes();
  const wrapper = useRef<HTMLDivElement>(null);
  const [nodes, setNodes, onNodesChange] = useNodesState<CanvasNode>([]);
  const [edges, setEdges, onEdgesChange] = useEdgesState<Edge>([]);
  const nodesRef = useRef<CanvasNode[]>([]);
  nodesRef.current = nodes;
  const fitFlow = useFitFlow();
  // A node's panel has a key of its own, which a renamed node keeps (and
  // so its fields and the focus): panelKeys maps node ids to those keys.
  const panelKeys = useRef<Record<string, string>>({});
  // Each Tidy up remembers the places it moved the nodes from.
  const [untidy, setUntidy] = useState<Record<string, { x: number; y: number }>[]>([]);
  const [flow, setFlow] = useState<Flow | null>(null);
  const [name, setName] = useState("Untitled flow");
  const [boardId, setBoardId] = useState<string>("");
  const [message, setMessage] = useState("");
  const [versions, setVersions] = useState<Version[]>([]);
  const [boards, setBoards] = useState<BoardSummary[] | null>(null);
  // Problems from the last save; an edge edited since keeps its problems
  // marked stale (shown in its editor, no longer painted on the canvas).
  const [problems, setProblems] = useState<(Problem & { stale?: boolean })[]>([]);
  const [loading, setLoading] = useState(!!flowId);
  const [loadError, setLoadError] = useState<unknown>(null);
  // missingVersion: ?version= names a version the flow does not have.
  const [missingVersion, setMissingVersion] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);
  // A flow just created arrives here under its new URL with its notice.
  const [notice, setNotice] = useState<string | null>(() => {
    const flash = sessionStorage.getItem("stitchd.flash");
    sessionStorage.removeItem("stitchd.flash");
    return flash;
  });
  const [saveError, setSaveError] = useState<string | null>(null);
  const [dirty, setDirty] = useState(false);
  // The flow's settings (graph.settings), saved with the graph.
  const [settings, setSettings] = useState<Record<string, any>>({});
  const [startOpen, setStartOpen] = useState(false);

  // Load the flow (or one of its versions) and the boards.
  const load = useCallback(async () => {
    setLoadError(null);
    api<{ boards: BoardSummary[] }>("GET", "/boards").then(
      (b) => setBoards(b.boards ?? []),
      () => setBoards(null),
    );
    if (!flowId) return;
    setLoading(true);
    setMissingVersion(null);
    try {
      // The types first: a graph's types are spelled as registered.
      await loadNodeTypes();
      const f = await api<Flow>("GET", `/flows/${flowId}`);
      const vs = await api<{ versions: Version[] }>("GET", `/flows/${flowId}/versions`);
      let graph = f.graph!;
      if (version && Number(version) !== f.version.number) {
        let v: Version;
        try {
          v = await api<Version>("GET", `/flows/${flowId}/versions/${version}`);
        } catch (err) {
          if (!isNotFound(err)) throw err;
          setMissingVersion(version);
          return;
        }
        graph = v.graph!;
      }
      const c = toCanvas(graph);
      setSettings(graph.settings && typeof graph.settings === "object" ? { ...graph.settings } : {});
      setFlow(f);
      setName(f.name);
      setBoardId(f.board_id ?? "");
      setVersions(vs.versions);
      setNodes(c.nodes);
      setEdges(c.edges);
      setProblems([]);
      setDirty(false);
      setUntidy([]);
    } catch (err) {
      setLoadError(err);
    } finally {
      setLoading(false);
    }
  }, [flowId, version, setNodes, setEdges]);
  useEffect(() => {
    void load();
  }, [load]);

  const markDirty = useCallback(() => {
    setDirty(true);
    setNotice(null);
  }, []);

  // Paint compile problems on nodes and edges.
  const byNode = useMemo(() => {
    const m: Record<string, string[]> = {};
    for (const p of problems) if (p.node_id && !p.stale) (m[p.node_id] ??= []).push(problemText(p.message, p.node_id));
    return m;
  }, [problems]);
  const byEdge = useMemo(() => {
    const m: Record<string, string[]> = {};
    for (const p of problems) if (p.edge_id && !p.stale) (m[p.edge_id] ??= []).push(p.message);
    return m;
  }, [problems]);
  // SubFlow nodes show the name of the flow they run (data.flow is its id).
  const hasSubFlow = nodes.some((n) => n.type === "SubFlow");
  const flowNames = useFlowNames(hasSubFlow);
  // The heat map: the last 30 days' figures of each node over the canvas
  // (GET /flows/{id}/analytics), and how often each branch was taken.
  const [heatOn, setHeatOn] = useState(false);
  const [heat, setHeat] = useState<FlowAnalytics | null>(null);
  const [heatError, setHeatError] = useState<string | null>(null);
  useEffect(() => {
    if (!heatOn || !flowId) return;
    let live = true;
    api<FlowAnalytics>("GET", `/flows/${flowId}/analytics`)
      .then((a) => live && setHeat(a))
      .catch((e) => live && setHeatError(describe(e)));
    return () => {
      live = false;
    };
  }, [heatOn, flowId]);
  const heatOf = useMemo(() => {
    const out: Record<string, FlowAnalytics["nodes"][number]> = {};
    if (heatOn && heat) for (const n of heat.nodes) out[n.key] = n;
    return out;
  }, [heatOn, heat]);
  const shownNodes = useMemo(
    () =>
      nodes.map((n) => {
        const named = n.type === "SubFlow" && flowNames[n.data.flow] ? { _flowName: flowNames[n.data.flow] } : null;
        const h = heatOn ? { _heat: heatOf[n.id] ?? { key: n.id, fired: 0 } } : null;
        return byNode[n.id] || named || h ? { ...n, data: { ...n.data, ...named, ...h, ...(byNode[n.id] ? { _problems: byNode[n.id] } : {}) } } : n;
      }),
    [nodes, byNode, flowNames, heatOn, heatOf],
  );
  // Cycles no loop edge closes, found as the graph is drawn (the server
  // refuses them when saving); a cycle closed by a loop edge is a loop.
  const nodeIds = nodes.map((n) => n.id).join("\n");
  const cycles = useMemo(() => unmarkedCycles(nodeIds.split("\n"), edges), [nodeIds, edges]);
  const shownEdges = useMemo(
    () =>
      edges.map((e) => {
        const src = heatOf[e.source];
        const took = src?.outcomes?.[`to:${e.target}`];
        const branches = src && Object.keys(src.outcomes ?? {}).some((k) => k.startsWith("to:"));
        return branches && src.completed > 0
          ? { ...e, label: `${Math.round(((took ?? 0) / src.completed) * 100)} %`, domAttributes: { ...(e.domAttributes as any), "data-heat-share": String(took ?? 0) } as any }
          : e;
      }).map((e) =>
        byEdge[e.id]
          ? {
              ...e,
              className: `${e.className ?? ""} edge-error`,
              label: `⚠ ${truncate(problemText(byEdge[e.id][0], e.id), 30)}`,
              style: { stroke: "var(--bad)", strokeWidth: 2.5 },
              ariaLabel: `Edge from ${e.source} to ${e.target}: ${byEdge[e.id].join("; ")}`,
            }
          : cycles.has(e.id)
            ? {
                ...e,
                className: `${e.className ?? ""} edge-cycle`,
                domAttributes: { ...(e.domAttributes as any), "data-cycle": cycles.get(e.id)!.join(" → ") } as any,
                ariaLabel: `Edge from ${e.source} to ${e.target}: on a cycle ${cycles.get(e.id)!.join(" → ")} that no loop edge closes`,
              }
            : e,
      ),
    [edges, byEdge, cycles, heatOf],
  );

  const selectedNode = nodes.find((n) => n.selected);
  const selectedEdge = selectedNode ? undefined : edges.find((e) => e.selected);
  // The flow's triggers, drawn as start nodes left of its first steps
  // (not part of the graph: never saved); a click opens one's settings.
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
  const selectedTrigger = selectedNode || selectedEdge ? undefined : triggers.find((t) => t.id === selectedTriggerId);
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
  const canvasNodeTypes = useMemo(() => ({ ...flowNodeTypes, trigger: TriggerNode }), [flowNodeTypes]);

  const addNode = useCallback(
    (type: string, screen: { x: number; y: number } | null) => {
      const r = wrapper.current?.getBoundingClientRect();
      const at = screen ?? (r ? { x: r.left + r.width / 2, y: r.top + r.height / 2 } : { x: 200, y: 200 });
      let pos = rf.screenToFlowPosition(at);
      // A node added by click or keyboard goes in the visible pane, at the
      // free place nearest its centre: on top of no other node.
      if (!screen && r) pos = freeSpot(pos, nodes, rf.screenToFlowPosition({ x: r.left, y: r.top }), rf.screenToFlowPosition({ x: r.right, y: r.bottom }));
      const id = nextId(typeInfo(type)?.idPrefix || type.toLowerCase(), new Set(nodes.map((n) => n.id)));
      // The data a new node starts with is its type's (GET /api/v1/node-types).
      const data: Record<string, any> = structuredClone(typeInfo(type)?.defaultConfig ?? {});
      setNodes((ns) => [
        ...ns.map((n) => ({ ...n, selected: false })),
        { id, type, position: { x: pos.x - 80, y: pos.y - 30 }, data, selected: true },
      ]);
      setEdges((es) => es.map((e) => ({ ...e, selected: false })));
      markDirty();
    },
    [nodes, rf, setNodes, setEdges, markDirty],
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

  const save = useCallback(async (): Promise<boolean> => {
    if (saving) return false;
    setSaving(true);
    setSaveError(null);
    setNotice(null);
    const graph = fromCanvas(nodes, edges);
    if (Object.keys(settings).length) graph.settings = settings;
    const body: Record<string, any> = { name: name.trim() || "Untitled flow", graph, board_id: boardId || null };
    if (message.trim()) body.message = message.trim();
    try {
      const f = flowId ? await api<Flow>("PUT", `/flows/${flowId}`, body) : await api<Flow>("POST", "/flows", body);
      setProblems([]);
      setDirty(false);
      setMessage("");
      const changed = !flow || f.version.number !== flow.version.number;
      setFlow(f);
      setNotice(changed ? `Saved as version ${f.version.number}.` : `No changes to the graph: still version ${f.version.number}.`);
      if (!flowId) {
        sessionStorage.setItem("stitchd.flash", `Created; saved as version ${f.version.number}.`);
        navigate(`/flows/${f.id}`, true, true);
      }
      else {
        const vs = await api<{ versions: Version[] }>("GET", `/flows/${f.id}/versions`);
        setVersions(vs.versions);
        if (version) navigate(`/flows/${f.id}`, true, true);
      }
      return true;
    } catch (err) {
      if (err instanceof ApiError && err.code === "invalid_graph") {
        setProblems(err.details);
        setSaveError(`The flow was not saved: ${err.details.length} problem${err.details.length === 1 ? "" : "s"} to fix.`);
      } else setSaveError(describe(err));
      return false;
    } finally {
      setSaving(false);
    }
  }, [saving, nodes, edges, settings, name, boardId, message, flowId, flow, version]);

  useEffect(() => {
    const on = (e: KeyboardEvent) => {
      if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === "s") {
        e.preventDefault();
        void save();
      }
    };
    window.addEventListener("keydown", on);
    return () => window.removeEventListener("keydown", on);
  }, [save]);

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
    [setNodes, markDirty],
  );
  const renameNode = useCallback(
    (from: string, to: string) => {
      const k = panelKeys.current;
      if (k[from]) k[to] = k[from];
      delete k[from];
      setNodes((ns) => ns.map((n) => (n.id === from ? { ...n, id: to } : n)));
      setEdges((es) => es.map((e) => ({ ...e, source: e.source === from ? to : e.source, target: e.target === from ? to : e.target })));
      setProblems((ps) => ps.map((p) => (p.node_id === from ? { ...p, node_id: to } : p)));
      markDirty();
    },
    [setNodes, setEdges, markDirty],
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
    [setEdges, markDirty],
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
  // that Undo tidy takes back.
  const tidyUp = useCallback(() => {
    const ns = nodesRef.current;
    if (!ns.length) return;
    const at = tidy(ns, edges);
    setUntidy((u) => [...u.slice(-9), Object.fromEntries(ns.map((n) => [n.id, n.position]))]);
    setNodes((cur) => cur.map((n) => (at[n.id] ? { ...n, position: at[n.id] } : n)));
    markDirty();
    requestAnimationFrame(() => fitFlow());
  }, [edges, setNodes, markDirty, fitFlow]);
  const undoTidy = useCallback(() => {
    const last = untidy[untidy.length - 1];
    if (!last) return;
    setUntidy((u) => u.slice(0, -1));
    setNodes((cur) => cur.map((n) => (last[n.id] ? { ...n, position: last[n.id] } : n)));
    markDirty();
  }, [untidy, setNodes, markDirty]);

  const board = boards?.find((b) => b.id === boardId);
  const current = flow?.version.number;
  const viewing = version ? Number(version) : current;

  if (loading) return <Spinner label="Loading flow…" />;
  if (missingVersion && flowId)
    return <NotFound what="version" id={`${missingVersion} of this flow`} back={`/flows/${flowId}`} backLabel="Open the current version" />;
  if (loadError && isNotFound(loadError)) return <NotFound what="flow" id={flowId ?? undefined} back="/flows" backLabel="All flows" />;
  if (loadError)
    return (
      <section className="page">
        <ErrorBox error={loadError} onRetry={load} />
        <Link to="/flows">Back to flows</Link>
      </section>
    );

  return (
    <section className="editor" aria-label="Flow editor">
      <div className="editor-bar">
        <div className="field inline">
          <label htmlFor="flow-name">Name</label>
          <input
            id="flow-name"
            value={name}
            onChange={(e) => {
              setName(e.target.value);
              markDirty();
            }}
          />
        </div>
        {boards && (
          <div className="field inline">
            <label htmlFor="flow-board">Board</label>
            <select
              id="flow-board"
              value={boardId}
              onChange={(e) => {
                setBoardId(e.target.value);
                markDirty();
              }}
            >
              <option value="">No board</option>
              {boards.map((b) => (
                <option key={b.id} value={b.id}>
                  {b.name}
                </option>
              ))}
            </select>
          </div>
        )}
        <div className="field inline grow">
          <label htmlFor="flow-message">Change note</label>
          <input id="flow-message" placeholder="What changed (optional)" value={message} onChange={(e) => setMessage(e.target.value)} />
        </div>
        {flowId && versions.length > 0 && (
          <div className="field inline">
            <label htmlFor="flow-version">Version</label>
            <select
              id="flow-version"
              value={String(viewing)}
              onChange={(e) => navigate(Number(e.target.value) === current ? `/flows/${flowId}` : `/flows/${flowId}?version=${e.target.value}`)}
            >
              {versions.map((v) => (
                <option key={v.id} value={v.number}>
                  v{v.number}
                  {v.number === current ? " (latest)" : ""}
                  {v.message ? ` — ${v.message}` : ""}
                </option>
              ))}
            </select>
          </div>
        )}
        <div className="bar-actions">
          {flowId && (
            <button
              type="button"
              className={`btn ghost ${heatOn ? "active" : ""}`}
              data-action="heatmap"
              aria-pressed={heatOn}
              onClick={() => {
                setHeatOn(!heatOn);
                setHeatError(null);
              }}
              title="The last 30 days of runs over the canvas: each step's times, failures and waits, each branch's share"
            >
              Heat map
            </button>
          )}
          {heatOn && flowId && (
            <button
              type="button"
              className="btn ghost"
              data-action="heatmap-csv"
              onClick={() => void download(`/flows/${flowId}/analytics?format=csv`, `${name || "flow"}-analytics.csv`).catch((e) => setHeatError(describe(e)))}
            >
              Export CSV
            </button>
          )}
          <button type="button" className="btn ghost" data-action="tidy" onClick={tidyUp} disabled={nodes.length === 0} title="Lay the steps out left to right">
            Tidy up
          </button>
          {untidy.length > 0 && (
            <button type="button" className="btn ghost" data-action="undo-tidy" onClick={undoTidy} title="Put the steps back where they were before Tidy up">
              Undo tidy
            </button>
          )}
          <button
            type="button"
            className="btn primary"
            onClick={() => void save()}
            disabled={saving || !can(currentMe().me, "edit")}
            title={can(currentMe().me, "edit") ? undefined : `Your role (${currentMe().me?.role}) may not change flows`}
            aria-keyshortcuts="Control+S"
          >
            {saving ? "Saving…" : "Save"}
          </button>
          {flowId && (
            <>
              {can(currentMe().me, "operate") && (
                <button type="button" className="btn" onClick={() => setStartOpen(true)}>
                  Start run
                </button>
              )}
              <Link className="btn ghost" to={`/runs?flow_id=${flowId}`}>
                Runs
              </Link>
              <Link className="btn ghost" to={`/flows/${flowId}/triggers`} data-link="triggers">
                Triggers
              </Link>
            </>
          )}
        </div>
      </div>
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
      <div className="editor-body">
        <Palette types={types} onAdd={addNode} />
        <div className="canvas" ref={wrapper} aria-label="Canvas">
          <ReactFlow
            colorMode="system"
            nodes={triggerNodes.length ? [...shownNodes, ...triggerNodes] : shownNodes}
            edges={triggerEdges.length ? [...shownEdges, ...triggerEdges] : shownEdges}
            nodeTypes={canvasNodeTypes}
            edgeTypes={edgeTypes}
            onNodesChange={(all) => {
              // A trigger's start node is drawn, not kept in the graph.
              const c = all.filter((x) => !("id" in x) || !x.id.startsWith(TRIGGER_PREFIX));
              onNodesChange(c);
              if (c.some((x) => x.type === "position" || x.type === "remove")) markDirty();
            }}
            onEdgesChange={(all) => {
              const c = all.filter((x) => !("id" in x) || !x.id.startsWith(TRIGGER_PREFIX));
              onEdgesChange(c);
              if (c.some((x) => x.type === "remove")) markDirty();
            }}
            onNodeClick={(_, n) => {
              if (!n.id.startsWith(TRIGGER_PREFIX)) {
                if (selectedTriggerId) setSelectedTrigger(null);
                return;
              }
              setNodes((ns) => ns.map((x) => (x.selected ? { ...x, selected: false } : x)));
              setEdges((es) => es.map((x) => (x.selected ? { ...x, selected: false } : x)));
              setTriggerNotice(null);
              setSelectedTrigger(n.id.slice(TRIGGER_PREFIX.length));
            }}
            onPaneClick={() => selectedTriggerId && setSelectedTrigger(null)}
            onConnect={connect}
            deleteKeyCode={["Backspace", "Delete"]}
            minZoom={0.1}
            proOptions={{ hideAttribution: true }}
          >
            {flowId && <FitOnOpen expect={triggersLoaded ? shownNodes.length + triggerNodes.length : Infinity} />}
            <Background gap={16} />
            <Controls />
            <MiniMap pannable zoomable className="minimap" />
          </ReactFlow>
          {nodes.length === 0 && (
            <div className="canvas-empty">
              <p>Drag a step from the palette onto the canvas, or press its button to add it.</p>
              <p>Connect steps by dragging from a node's right handle to another node's left handle.</p>
            </div>
          )}
        </div>
        <aside className="side" aria-label="Settings">
          {problems.length > 0 && (
            <div className="problems" aria-label="Compile problems">
              <h2>Problems ({problems.length})</h2>
              <ul>
                {problems.map((p, i) => (
                  <li key={i}>
                    {p.node_id ? (
                      <button type="button" className="linklike" onClick={() => selectNode(p.node_id!)}>
                        {p.node_id}
                      </button>
                    ) : p.edge_id ? (
                      <button type="button" className="linklike mono" onClick={() => selectEdge(p.edge_id!)}>
                        {p.edge_id}
                      </button>
                    ) : null}
                    {p.path && <span className="mono muted"> {p.path}</span>} — {problemText(p.message, p.edge_id ?? p.node_id ?? "")}
                    {p.stale && <span className="muted"> (edited since)</span>}
                  </li>
                ))}
              </ul>
            </div>
          )}
          {selectedNode ? (
            <NodeSettings
              key={(panelKeys.current[selectedNode.id] ??= `${selectedNode.id}#${++panels}`)}
              node={selectedNode}
              nodes={nodes}
              edges={edges}
              sections={board?.sections ?? null}
              onChange={updateNode}
              onRename={renameNode}
              onDelete={deleteNode}
              onConnect={(target) => connect({ source: selectedNode.id, target, sourceHandle: null, targetHandle: null })}
              onSelectEdge={selectEdge}
              onRenameOutcome={renameOutcome}
              problems={problems.filter((p) => p.node_id === selectedNode.id)}
              flowId={flowId}
              graph={() => withSettings(fromCanvas(nodes, edges), settings)}
            />
          ) : selectedEdge ? (
            <EdgeSettings
              key={selectedEdge.id}
              edge={selectedEdge}
              source={nodes.find((n) => n.id === selectedEdge.source)}
              siblings={edges.filter((e) => e.source === selectedEdge.source && e.id !== selectedEdge.id)}
              edges={edges}
              cycle={cycles.get(selectedEdge.id) ?? null}
              onChange={updateEdge}
              onDelete={deleteEdge}
              onSelectNode={selectNode}
              problems={problems.filter((p) => p.edge_id === selectedEdge.id)}
              flowId={flowId}
              nodes={nodes}
              graph={() => withSettings(fromCanvas(nodes, edges), settings)}
            />
          ) : selectedTrigger ? (
            <div className="settings trigger-settings" aria-label="Trigger settings" data-trigger-settings={selectedTrigger.id}>
              <h2>
                <span className="type-chip" style={{ "--c": "#64748b" } as CSSProperties}>
                  ⚡ {triggerTitle(selectedTrigger).kind}
                </span>{" "}
                trigger
              </h2>
              <p className="muted small">
                Starts this flow: its settings are saved at once, apart from the flow's Save.{" "}
                <Link to={`/flows/${flowId}/triggers`}>All triggers</Link>
              </p>
              {triggerNotice && (
                <div className="banner ok" role="status">
                  {triggerNotice}
                </div>
              )}
              <TriggerPanel
                key={selectedTrigger.id}
                t={selectedTrigger}
                onChanged={() => void loadTriggers()}
                onNotice={setTriggerNotice}
              />
            </div>
          ) : (
            <>
              <div className="side-empty">
                <h2>Settings</h2>
                <p className="muted">Select a node or an edge to edit its settings.</p>
              </div>
              <FlowSettings
                settings={settings}
                problems={problems.filter((p) => !p.node_id && !p.edge_id && (p.path ?? "").startsWith("settings"))}
                onChange={(next) => {
                  setSettings(next);
                  markDirty();
                }}
              />
            </>
          )}
        </aside>
      </div>
      <UnsavedGuard dirty={dirty} onSave={save} />
      {startOpen && flowId && <StartRunDialog flowId={flowId} dirty={dirty} boardId={flow?.board_id ?? null} onClose={() => setStartOpen(false)} />}
    </section>
  );
}

// The ways a flow may treat a second run for an entity whose run of it is
// still going (settings.entityConcurrency), with what each does.
const CONCURRENCY: { value: string; label: string; help: string }[] = [
  { value: "queue", label: "Queue (default)", help: "The new run waits, queued, and begins by itself when the entity's run before it ends." },
  { value: "skip", label: "Skip", help: "The new run is refused (409 entity_busy; a webhook answers 200 skipped): one run per entity at a time." },
  { value: "allow", label: "Allow", help: "Every run starts at once, beside the entity's runs already going." },
];

// FlowSettings edits the flow's own settings: how runs for one entity
// overlap, the run deadline and how long finished runs are kept. A field
// left empty is not set (the server's default applies).
function FlowSettings({ settings, problems, onChange }: { settings: Record<string, any>; problems: Problem[]; onChange: (s: Record<string, any>) => void }) {
  const set = (k: string, v: unknown) => {
    const next = { ...settings };
    if (v === undefined || v === "") delete next[k];
    else next[k] = v;
    onChange(next);
  };
  const mode = typeof settings.entityConcurrency === "string" ? settings.entityConcurrency : "queue";
  const num = (k: string) => (settings[k] === undefined ? "" : String(settings[k]));
  const toNum = (v: string) => (v.trim() === "" ? undefined : Number.isFinite(Number(v)) ? Number(v) : v);
  const problem = (path: string) => problems.find((p) => p.path === path)?.message;
  return (
    <section className="flow-settings" aria-label="Flow settings" data-flow-settings>
      <h2>Flow settings</h2>
      <fieldset className="field">
        <legend>A run for an entity that already has a run of this flow going</legend>
        {CONCURRENCY.map((c) => (
          <label key={c.value} className="radio">
            <input type="radio" name="entity-concurrency" value={c.value} checked={mode === c.value} data-concurrency={c.value} onChange={() => set("entityConcurrency", c.value)} />
            <span>
              <strong>{c.label}</strong> <span className="muted small">{c.help}</span>
            </span>
          </label>
        ))}
        {problem("settings.entityConcurrency") && <p className="field-error">{problem("settings.entityConcurrency")}</p>}
      </fieldset>
      <div className="field">
        <label htmlFor="flow-deadline">Run deadline (seconds)</label>
        <input id="flow-deadline" inputMode="numeric" placeholder="none" value={num("deadlineSeconds")} onChange={(e) => set("deadlineSeconds", toNum(e.target.value))} />
        <p className="muted small">A run still going after this long fails. Empty: no deadline.</p>
        {problem("settings.deadlineSeconds") && <p className="field-error">{problem("settings.deadlineSeconds")}</p>}
      </div>
      <div className="field">
        <label htmlFor="flow-retention">Keep finished runs (days)</label>
        <input id="flow-retention" inputMode="numeric" placeholder="server default" value={num("retentionDays")} onChange={(e) => set("retentionDays", toNum(e.target.value))} />
        <p className="muted small">Finished runs older than this are deleted. Empty: the server's --retention.</p>
        {problem("settings.retentionDays") && <p className="field-error">{problem("settings.retentionDays")}</p>}
      </div>
    </section>
  );
}

// Palette: drag a step onto the canvas with the mouse, touch or pen
// (pointer events), or press it (click, Enter, Space) to add it in the
// middle of the view.
function Palette({ types, onAdd }: { types: NodeTypeInfo[]; onAdd: (t: string, at: { x: number; y: number } | null) => void }) {
  const [ghost, setGhost] = useState<{ type: string; x: number; y: number } | null>(null);
  const drag = useRef<{ type: string; x: number; y: number; moved: boolean } | null>(null);
  const suppressClick = useRef(false);
  const [query, setQuery] = useState("");
  const shown = matchTypes(types, query);

  const down = (type: string) => (e: RPointerEvent<HTMLButtonElement>) => {
    if (e.button !== 0) return;
    drag.current = { type, x: e.clientX, y: e.clientY, moved: false };
    e.currentTarget.setPointerCapture(e.pointerId);
  };
  const move = (e: RPointerEvent<HTMLButtonElement>) => {
    const d = drag.current;
    if (!d) return;
    if (!d.moved && Math.hypot(e.clientX - d.x, e.clientY - d.y) < 5) return;
    d.moved = true;
    setGhost({ type: d.type, x: e.clientX, y: e.clientY });
  };
  const up = (e: RPointerEvent<HTMLButtonElement>) => {
    const d = drag.current;
    drag.current = null;
    setGhost(null);
    if (!d || !d.moved) return;
    suppressClick.current = true;
    const el = document.elementFromPoint(e.clientX, e.clientY);
    if (el?.closest(".react-flow")) onAdd(d.type, { x: e.clientX, y: e.clientY });
  };

  return (
    <div className="palette" aria-label="Palette">
      <h2>Steps</h2>
      <PaletteSearch value={query} onChange={setQuery} first={shown[0]?.type ?? null} onAdd={(t) => onAdd(t, null)} />
      {query && shown.length === 0 && <p className="muted small" data-palette-none>No step matches “{query}”.</p>}
      {shown.map(({ type: t, label, help, color }) => (
        <button
          key={t}
          type="button"
          className={`palette-item snode-${t.toLowerCase()}`}
          style={color ? ({ "--c": color } as CSSProperties) : undefined}
          data-palette={t}
          onPointerDown={down(t)}
          onPointerMove={move}
          onPointerUp={up}
          onPointerCancel={() => {
            drag.current = null;
            setGhost(null);
          }}
          onClick={() => {
            if (suppressClick.current) {
              suppressClick.current = false;
              return;
            }
            onAdd(t, null);
          }}
          title={help}
          aria-label={`Add ${label} step: ${help}`}
        >
          <strong>{label}</strong>
          <span>{help}</span>
        </button>
      ))}
      {ghost && (
        <div className={`palette-ghost snode-${ghost.type.toLowerCase()}`} style={{ left: ghost.x, top: ghost.y, ...(typeInfo(ghost.type)?.color ? { "--c": typeInfo(ghost.type)!.color } : {}) } as CSSProperties} aria-hidden="true">
          {ghost.type}
        </div>
      )}
    </div>
  );
}


// freeSpot is the centre nearest want, in flow coordinates, where a new
// node (about 180 by 70) overlaps none of nodes, looked for in rings of
// places around want that stay inside the visible pane (lo to hi); want
// itself when the pane has no free place.
function freeSpot(want: { x: number; y: number }, nodes: CanvasNode[], lo: { x: number; y: number }, hi: { x: number; y: number }): { x: number; y: number } {
  const W = 180;
  const H = 70;
  const gap = 16;
  const boxes = nodes.map((n) => ({ x: n.position.x, y: n.position.y, w: n.measured?.width ?? W, h: n.measured?.height ?? H }));
  const free = (c: { x: number; y: number }) => {
    const x = c.x - 80;
    const y = c.y - 30;
    if (x < lo.x || y < lo.y || x + W > hi.x || y + H > hi.y) return false;
    return boxes.every((b) => x + W + gap <= b.x || b.x + b.w + gap <= x || y + H + gap <= b.y || b.y + b.h + gap <= y);
  };
  const dx = W + gap;
  const dy = H + gap;
  for (let ring = 0; ring <= 8; ring++) {
    let best: { x: number; y: number } | null = null;
    let bestD = Infinity;
    for (let i = -ring; i <= ring; i++)
      for (let j = -ring; j <= ring; j++) {
        if (Math.max(Math.abs(i), Math.abs(j)) !== ring) continue;
        const c = { x: want.x + i * dx, y: want.y + j * dy };
        const d = (i * dx) ** 2 + (j * dy) ** 2;
        if (d < bestD && free(c)) {
          best = c;
          bestD = d;
        }
      }
    if (best) return best;
  }
  return want;
}
