import { Background, Controls, MiniMap, ReactFlow, ReactFlowProvider, useEdgesState, useNodesState, type Edge } from "@xyflow/react";
import { useCallback, useMemo, useRef, useState } from "react";
import { plainProblem } from "../plainProblem";
import { TRIGGER_PREFIX, TriggerNode } from "../components/TriggerNode";
import { ErrorBox, isNotFound, NotFound, Spinner } from "../components/common";
import { edgeTypes } from "../components/LoopEdge";
import { useFlowNames } from "../flows";
import { useFlowNodeTypes } from "../components/StitchNode";
import { useNodeTypes } from "../nodetypes";
import { fromCanvas, problemText, truncate, unmarkedCycles, type CanvasNode } from "../graph";
import { Link } from "../router";
import { UnsavedGuard } from "../components/UnsavedGuard";
import { FitOnOpen } from "../components/FitOnOpen";
import { EdgeSettings } from "./EdgeSettings";
import { NodeSettings } from "./NodeSettings";
import { StartRunDialog } from "./StartRun";
import { FlowSettings } from "./flowEditor/FlowSettings";
import { Palette } from "./flowEditor/Palette";
import { ProblemList } from "./flowEditor/ProblemList";
import { TriggerSettings } from "./flowEditor/TriggerSettings";
import { useFlowDraft } from "./flowEditor/useFlowDraft";
import { useFlowTriggers } from "./flowEditor/useFlowTriggers";
import { useGraphEdits } from "./flowEditor/useGraphEdits";
import { useGraphHistory } from "./flowEditor/useGraphHistory";
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

// plainText is a problem's plain words where there are some (on the canvas,
// where the technical message has no room beside them).
const plainText = (msg: string) => plainProblem(msg) ?? msg;

export function FlowEditor(props: Props) {
  return (
    <ReactFlowProvider>
      <Editor {...props} />
    </ReactFlowProvider>
  );
}

function Editor({ flowId, version }: Props) {
  const flowNodeTypes = useFlowNodeTypes();
  const types = useNodeTypes();
  const wrapper = useRef<HTMLDivElement>(null);
  const [nodes, setNodes, onNodesChange] = useNodesState<CanvasNode>([]);
  const [edges, setEdges, onEdgesChange] = useEdgesState<Edge>([]);
  // A flow loaded starts a new history (its Undo goes no further back).
  const resetHistory = useRef(() => {});
  const draft = useFlowDraft({ flowId, version, nodes, edges, setNodes, setEdges, onLoaded: () => resetHistory.current() });
  const { flow, boards, boardId, problems, setProblems, loadError, dirty, settings, markDirty, save } = draft;
  const history = useGraphHistory({ nodes, edges, setNodes, setEdges, markDirty });
  resetHistory.current = history.reset;
  const [startOpen, setStartOpen] = useState(false);
  const edits = useGraphEdits({ wrapper, nodes, edges, setNodes, setEdges, setProblems, markDirty });
  const { panelKey, addNode, connect, updateNode, renameNode, deleteNode, updateEdge, renameOutcome, selectEdge, deleteEdge, selectNode, tidyUp } = edits;
  const { setHeldBack } = draft;
  const selectedId = nodes.find((n) => n.selected)?.id;
  // Text typed in a node's JSON tab and not applied is unsaved work that a
  // save would leave out: the draft counts as unsaved, and Save says so.
  const onJsonPending = useCallback(
    (pending: boolean) =>
      setHeldBack(pending ? `The JSON tab of step ${selectedId ?? ""} holds changes not applied: Apply or Reset them, then save.` : null),
    [setHeldBack, selectedId],
  );

  // Paint compile problems on nodes and edges.
  const byNode = useMemo(() => {
    const m: Record<string, string[]> = {};
    for (const p of problems) if (p.node_id && !p.stale) (m[p.node_id] ??= []).push(plainText(problemText(p.message, p.node_id)));
    return m;
  }, [problems]);
  const byEdge = useMemo(() => {
    const m: Record<string, string[]> = {};
    for (const p of problems) if (p.edge_id && !p.stale) (m[p.edge_id] ??= []).push(plainText(problemText(p.message, p.edge_id)));
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

  const board = boards?.find((b) => b.id === boardId);
  const current = flow?.version.number;
  const viewing = version ? Number(version) : current;

  if (draft.loading) return <Spinner label="Loading flow…" />;
  if (draft.missingVersion && flowId)
    return <NotFound what="version" id={`${draft.missingVersion} of this flow`} back={`/flows/${flowId}`} backLabel="Open the current version" />;
  if (loadError && isNotFound(loadError)) return <NotFound what="flow" id={flowId ?? undefined} back="/flows" backLabel="All flows" />;
  if (loadError)
    return (
      <section className="page">
        <ErrorBox error={loadError} onRetry={draft.load} />
        <Link to="/flows">Back to flows</Link>
      </section>
    );

  return (
    <section className="editor" aria-label="Flow editor">
      <EditorBar
        name={draft.name}
        setName={draft.setName}
        boards={boards}
        boardId={boardId}
        setBoardId={draft.setBoardId}
        message={draft.message}
        setMessage={draft.setMessage}
        markDirty={markDirty}
        flowId={flowId}
        versions={draft.versions}
        viewing={viewing}
        current={current}
        heatOn={heatOn}
        setHeatOn={setHeatOn}
        setHeatError={setHeatError}
        canTidy={nodes.length > 0}
        tidyUp={tidyUp}
        canUndo={history.canUndo}
        undo={history.undo}
        canRedo={history.canRedo}
        redo={history.redo}
        save={save}
        saving={draft.saving}
        onStart={() => setStartOpen(true)}
      />
      <EditorMessages heatOn={heatOn} heat={heat} heatError={heatError} viewing={viewing} current={current} flowId={flowId} dirty={dirty} notice={draft.notice} saveError={draft.saveError} flow={flow} />
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
              key={panelKey(selectedNode.id)}
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
              onJsonPending={onJsonPending}
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
                  draft.setSettings(next);
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
