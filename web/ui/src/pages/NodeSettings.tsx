// NodeSettings is the settings panel of the node selected in the editor:
// its tabs (settings, test, JSON), its name, when it fires, the panel
// made for its type (nodesettings/registry.ts) or its config schema's
// form, its data, where it moves the entity and its edges.
import type { Edge } from "@xyflow/react";
import { useState, type CSSProperties } from "react";
import type { Problem } from "../api";
import { JsonTab } from "../components/JsonTab";
import { TestTab } from "../components/TestTab";
import { PanelTabs, type PanelTab } from "../components/PanelTabs";
import { DataPanel } from "../components/DataPanel";
import { PlainProblem } from "../components/PlainProblem";
import { asSample, drafts, pinText, setDraft, useStepData, type Sample } from "../components/sample";
import { scopeOf } from "../components/scope";
import type { CanvasNode } from "../graph";
import { isCompensation, isLoop } from "../graph";
import { movesEntity, typeInfo } from "../nodetypes";
import { JoinField } from "./nodesettings/JoinField";
import { EntityMovements } from "./nodesettings/Movement";
import { NameFields } from "./nodesettings/NameFields";
import { NodeLinks } from "./nodesettings/NodeLinks";
import { panelFor } from "./nodesettings/registry";
import { CodeFields, schemaConfig, SchemaForm } from "./nodesettings/SchemaConfig";
import { ServerProblems, setIn, withoutKeys, type PanelProps } from "./nodesettings/shared";

interface NodeProps {
  node: CanvasNode;
  nodes: CanvasNode[];
  edges: Edge[];
  sections: { id: string; name: string }[] | null;
  problems: (Problem & { stale?: boolean })[];
  // flowId: the flow being edited (null for a new one).
  flowId?: string | null;
  // graph: the editor's graph as it stands (unsaved edits included), for
  // trying the step.
  graph?: () => unknown;
  onChange: (id: string, data: Record<string, any>) => void;
  // onRename renames the node and answers how many references to it
  // (steps.<id>) it renamed too.
  onRename: (from: string, to: string) => number;
  onDelete: (id: string) => void;
  onConnect: (target: string) => void;
  onSelectEdge: (id: string) => void;
  onRenameOutcome: (node: string, from: string, to: string) => void;
  // onJsonPending: the JSON tab holds text not applied (true) or not.
  onJsonPending?: (pending: boolean) => void;
}

export function NodeSettings({ node, nodes, edges, sections, problems, flowId = null, graph = () => null, onChange, onRename, onDelete, onConnect, onSelectEdge, onRenameOutcome, onJsonPending }: NodeProps) {
  const d = node.data;
  const type = String(node.type);
  const info = typeInfo(type);
  const moves = movesEntity(info);
  const config = schemaConfig(info);
  const set = (path: string[]) => (v: any) => onChange(node.id, setIn(d, path, v));
  const [idDraft, setIdDraft] = useState(node.id);
  const [idError, setIdError] = useState<string | null>(null);
  const [idNote, setIdNote] = useState<string | null>(null);
  const [target, setTarget] = useState("");
  const [tab, setTab] = useState<PanelTab>("settings");
  const stepData = useStepData(flowId, node.id, d._pinned);
  const scope = scopeOf(node.id, stepData, nodes, edges, false);
  // A pinned sample is kept in the node's data as _pinned: saved beside
  // the step's config (a node's "pinned"), never part of it.
  const pin = (s: Sample | null) => {
    // The Test tab shows the pin as pinned, not as a draft that differs.
    if (s && flowId) setDraft(flowId, node.id, pinText(s));
    // Unpinned, the step sees the last run again, not the pin as a draft.
    const was = asSample(d._pinned);
    if (!s && flowId && was && drafts.get(`${flowId}/${node.id}`) === pinText(was)) setDraft(flowId, node.id, "");
    onChange(node.id, s ? { ...d, _pinned: s } : withoutKeys(d, ["_pinned"]));
  };
  const targets = nodes.filter((n) => n.id !== node.id && !edges.some((e) => e.source === node.id && e.target === n.id));
  const outgoing = edges.filter((e) => e.source === node.id);
  // The forward edges in: a node with several may fire on the first
  // (data.join "any").
  const incoming = edges.filter((e) => e.target === node.id && !isLoop(e.data as any) && !isCompensation(e.data as any));
  // A server message about one field is shown under that field; the rest
  // at the top.
  const at = (field: string) => problems.filter((p) => new RegExp(`\\.data\\.${field}(\\.|\\[|$)`).test(p.path ?? ""));
  const panel = panelFor(type);
  const claimed = new Set([...(panel?.fields ?? []), "join"].flatMap(at));
  const commitId = () => {
    const v = idDraft.trim();
    if (v === node.id) return setIdError(null);
    // Stricter than the server's rule (64 of letters, digits, _ . -): an
    // id is how expressions name the step (steps.<id>).
    if (!/^[A-Za-z][A-Za-z0-9_-]*$/.test(v) || v.length > 64)
      return setIdError("Use at most 64 letters, digits, _ and -, starting with a letter: expressions name the step by it (steps.<id>).");
    if (nodes.some((n) => n.id === v)) return setIdError(`Another node is already called ${v}.`);
    setIdError(null);
    const from = node.id;
    const n = onRename(from, v);
    setIdNote(n === 0 ? null : `${n === 1 ? "1 reference" : `${n} references`} to steps.${from} now ${n === 1 ? "names" : "name"} ${v}.`);
  };
  const panelProps: PanelProps = {
    node,
    data: d,
    set,
    onChange: (nd) => onChange(node.id, nd),
    problemsAt: at,
    scope,
    sample: stepData.sample,
    flowId,
    graph,
    outgoing,
    sections,
    onRenameOutcome,
  };
  const Panel = panel?.Panel;
  const AfterMovement = panel?.AfterMovement;

  return (
    <form className="settings" onSubmit={(e) => e.preventDefault()} aria-label={`${type} ${node.id} settings`}>
      <h2>
        <span className={`type-chip snode-${type.toLowerCase()}`} style={info?.color ? ({ "--c": info.color } as CSSProperties) : undefined}>
          {type}
        </span> {node.id}
      </h2>
      <p className="muted small">{info?.help}</p>
      <PanelTabs tab={tab} onTab={setTab} />
      {problems
        .filter((p) => !claimed.has(p))
        .map((p, i) => (
          <p key={i} className={`field-error ${p.stale ? "stale" : ""}`} role="alert">
            ⚠ {p.stale ? "At the last save: " : ""}
            <PlainProblem message={p.message} path={p.path} />
          </p>
        ))}
      {tab === "test" ? (
        <TestTab flowId={flowId} nodeId={node.id} graph={graph} pinned={d._pinned} onPin={pin} />
      ) : tab === "json" ? (
        <JsonTab nodeId={node.id} data={d} onApply={(nd) => onChange(node.id, nd)} onPending={onJsonPending} />
      ) : (
        <>
          <NameFields idDraft={idDraft} setIdDraft={setIdDraft} idError={idError} idNote={idNote} commitId={commitId} label={d.label ?? ""} onLabel={(v) => set(["label"])(v)} />
          <CodeFields codeProps={config.codeProps} data={d} set={set} scope={scope} problemsAt={at} />
          {(incoming.length > 1 || d.join !== undefined) && !info?.capabilities?.collects && (
            <JoinField join={d.join} incoming={incoming.length} onJoin={(v) => set(["join"])(v)} />
          )}
          <ServerProblems problems={at("join")} id={node.id} />
          <SchemaForm type={type} nodeId={node.id} config={config} data={d} onChange={(nd) => onChange(node.id, nd)} />
          {Panel && <Panel {...panelProps} />}
          <DataPanel
            scope={scope}
            output={stepData.output}
            from={stepData.from}
            tested={stepData.tested}
            condition={false}
            onPin={() => pin(stepData.sample)}
            onUnpin={() => pin(null)}
          />
          {moves && <EntityMovements data={d} sections={sections} set={set} />}
          {AfterMovement && <AfterMovement {...panelProps} />}
          <NodeLinks nodeId={node.id} outgoing={outgoing} targets={targets} target={target} setTarget={setTarget} onConnect={onConnect} onSelectEdge={onSelectEdge} />
        </>
      )}
      <button type="button" className="btn danger" onClick={() => onDelete(node.id)}>
        Delete node
      </button>
    </form>
  );
}
