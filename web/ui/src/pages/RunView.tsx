// RunView shows a run: its bar, its banners, its canvas and, beside it,
// the selected node's detail or the run's timeline and summary. Its
// parts are in runview/: the run read (useRun), its events followed
// (useRunStream), the canvas built (useRunCanvas).
import { Background, Controls, ReactFlow, ReactFlowProvider } from "@xyflow/react";
import { useEffect, useRef, useState } from "react";
import { api, can, currentMe } from "../api";
import { ErrorBox, isNotFound, NotFound, Spinner } from "../components/common";
import { FitOnOpen } from "../components/FitOnOpen";
import { edgeTypes } from "../components/LoopEdge";
import { Timeline } from "../components/Timeline";
import { useFlowNodeTypes } from "../components/StitchNode";
import { useFlowNames } from "../flows";
import { outcomesOf } from "../graph";
import { RunSummary } from "./runview/events";
import { refusal } from "./runview/NodeActions";
import { NodeDetail } from "./runview/NodeDetail";
import { RunBanners } from "./runview/RunBanners";
import { Legend, MeasureUnsized } from "./runview/RunCanvas";
import { RunHeader } from "./runview/RunHeader";
import { ParentCrumb } from "./runview/RunLinks";
import { useRun } from "./runview/useRun";
import { useRunCanvas } from "./runview/useRunCanvas";
import { useRunStream } from "./runview/useRunStream";


// RunView shows a run; focus (?key=) names a node instance to open, as a
// sub-flow run's breadcrumb does for its parent's SubFlow step.
export function RunView({ runId, focus = null }: { runId: string; focus?: string | null }) {
  const flowNodeTypes = useFlowNodeTypes();
  const { run, setRun, graph, flow, version, versions, error, flowHidden, fetchRun, shownGraph } = useRun(runId);
  const [migrating, setMigrating] = useState(false);
  const [migrated, setMigrated] = useState<number | null>(null);
  const me = currentMe().me;
  const [selected, setSelected] = useState<string | null>(null);
  const focused = useRef(false);
  const [actionError, setActionError] = useState<string | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const size = run?.nodes ? Object.keys(run.nodes).length : 0;
  const { live, events, eventCount } = useRunStream(runId, fetchRun, size);
  // Open the instance named by ?key= once the run is read.
  useEffect(() => {
    if (focused.current || !focus || !run?.nodes) return;
    focused.current = true;
    const st = run.nodes[focus];
    if (st) setSelected(st.node_id);
  }, [focus, run]);
  // SubFlow nodes show the name of the flow they run.
  const flowNames = useFlowNames(!flowHidden && !!graph?.nodes.some((n) => n.type === "SubFlow"));
  const { byNode, history, loops, onNodesChange, canvas } = useRunCanvas({ run, shownGraph, selected, flowNames, flowNodeTypes, events, eventCount });

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

  return (
    <section className="runview" aria-label="Run" data-run-status={run.status}>
      {run.parent_run_id && <ParentCrumb parentRunId={run.parent_run_id} parentKey={run.parent_key ?? ""} />}
      <RunHeader
        run={run}
        flow={flow}
        version={version}
        live={live}
        me={me}
        busy={busy}
        migrating={migrating}
        shownGraph={shownGraph}
        onMigrate={() => {
          setMigrating((m) => !m);
          setMigrated(null);
        }}
        control={control}
        act={act}
      />
      <RunBanners
        run={run}
        events={events.current}
        byNode={byNode}
        versions={versions}
        version={version}
        migrating={migrating}
        migrated={migrated}
        actionError={actionError}
        flowHidden={flowHidden}
        setMigrating={setMigrating}
        onMigrated={(r, n) => {
          setRun(r);
          setMigrating(false);
          setMigrated(n);
        }}
        fetchRun={fetchRun}
      />
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
              <Timeline run={run} edges={graph?.edges} />
              <RunSummary run={run} events={events.current} eventCount={eventCount} />
            </>
          )}
        </aside>
      </div>
    </section>
  );
}
