import { addEdge, Background, Controls, MiniMap, ReactFlow, ReactFlowProvider, useEdgesState, useNodesState, useReactFlow, type Connection, type Edge } from "@xyflow/react";
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { api, ApiError, describe, type Flow, type Problem, type Version, type BoardListed } from "../api";
import { TRIGGER_PREFIX, TriggerNode } from "../components/TriggerNode";
import { ErrorBox, isNotFound, NotFound, Spinner } from "../components/common";
import { edgeTypes } from "../components/LoopEdge";
import { useFlowNames } from "../flows";
import { useFlowNodeTypes } from "../components/StitchNode";
import { loadNodeTypes, typeInfo, useNodeTypes } from "../nodetypes";
import { decorateEdge, fromCanvas, nextId, problemText, toCanvas, truncate, unmarkedCycles, type CanvasNode } from "../graph";
import { Link, navigate } from "../router";
import { UnsavedGuard } from "../components/UnsavedGuard";
import { FitOnOpen, useFitFlow } from "../components/FitOnOpen";
import { tidy } from "../tidy";
import { EdgeSettings } from "./EdgeSettings";
import { NodeSettings } from "./NodeSettings";
import { StartRunDialog } from "./StartRun";
import { freeSpot } from "./flowEditor/freeSpot";
import { FlowSettings } from "./flowEditor/FlowSettings";
import { Palette } from "./flowEditor/Palette";
import { ProblemList } from "./flowEditor/ProblemList";
import { TriggerSettings } from "./flowEditor/TriggerSettings";
import { useFlowTriggers } from "./flowEditor/useFlowTriggers";
import { useHeat } from "./flowEditor/useHeat";
import { EditorBar } from "./flowEditor/EditorBar";
import { EditorMessages } from "./flowEditor/EditorMessages";

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
  const { heatOn, setHeatOn, heat, heatError, setHeatError, heatOf } = useHeat(flowId);
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
  const { triggerNotice, setTriggerNotice, selectedTriggerId, setSelectedTrigger, triggersLoaded, loadTriggers, selectedTrigger, triggerNodes, triggerEdges } = useFlowTriggers({
    flowId,
    nodes,
    edges,
    selected: !!(selectedNode || selectedEdge),
  });
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
      <EditorBar
        name={name}
        setName={setName}
        boards={boards}
        boardId={boardId}
        setBoardId={setBoardId}
        message={message}
        setMessage={setMessage}
        markDirty={markDirty}
        flowId={flowId}
        versions={versions}
        viewing={viewing}
        current={current}
        heatOn={heatOn}
        setHeatOn={setHeatOn}
        setHeatError={setHeatError}
        canTidy={nodes.length > 0}
        tidyUp={tidyUp}
        canUndoTidy={untidy.length > 0}
        undoTidy={undoTidy}
        save={save}
        saving={saving}
        onStart={() => setStartOpen(true)}
      />
      <EditorMessages heatOn={heatOn} heat={heat} heatError={heatError} viewing={viewing} current={current} flowId={flowId} dirty={dirty} notice={notice} saveError={saveError} flow={flow} />
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
          <ProblemList problems={problems} selectNode={selectNode} selectEdge={selectEdge} />
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
            <TriggerSettings trigger={selectedTrigger} flowId={flowId} notice={triggerNotice} setNotice={setTriggerNotice} onChanged={() => void loadTriggers()} />
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
