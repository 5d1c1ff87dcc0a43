import type { Edge } from "@xyflow/react";
import { useState } from "react";
import type { Problem } from "../api";
import type { CanvasNode } from "../graph";
import { TYPE_HELP, type NodeType } from "../graph";

// setIn returns a copy of obj with path set to v; empty values and empty
// objects are dropped so the saved graph stays minimal.
function setIn(obj: Record<string, any>, path: string[], v: any): Record<string, any> {
  const out = { ...obj };
  if (path.length === 1) {
    if (v === "" || v === undefined || v === null || (typeof v === "number" && isNaN(v))) delete out[path[0]];
    else out[path[0]] = v;
    return out;
  }
  const child = setIn(typeof out[path[0]] === "object" && out[path[0]] ? out[path[0]] : {}, path.slice(1), v);
  if (Object.keys(child).length === 0) delete out[path[0]];
  else out[path[0]] = child;
  return out;
}

const num = (s: string) => (s.trim() === "" ? undefined : Number(s));

interface NodeProps {
  node: CanvasNode;
  nodes: CanvasNode[];
  edges: Edge[];
  sections: { id: string; name: string }[] | null;
  problems: Problem[];
  onChange: (id: string, data: Record<string, any>) => void;
  onRename: (from: string, to: string) => void;
  onDelete: (id: string) => void;
  onConnect: (target: string) => void;
}

export function NodeSettings({ node, nodes, edges, sections, problems, onChange, onRename, onDelete, onConnect }: NodeProps) {
  const d = node.data;
  const type = String(node.type) as NodeType;
  const set = (path: string[]) => (v: any) => onChange(node.id, setIn(d, path, v));
  const [idDraft, setIdDraft] = useState(node.id);
  const [idError, setIdError] = useState<string | null>(null);
  const [target, setTarget] = useState("");
  const targets = nodes.filter((n) => n.id !== node.id && !edges.some((e) => e.source === node.id && e.target === n.id));
  const commitId = () => {
    const v = idDraft.trim();
    if (v === node.id) return setIdError(null);
    if (!/^[A-Za-z][A-Za-z0-9_-]*$/.test(v)) return setIdError("Use letters, digits, _ and -, starting with a letter.");
    if (nodes.some((n) => n.id === v)) return setIdError(`Another node is already called ${v}.`);
    setIdError(null);
    onRename(node.id, v);
  };

  return (
    <form className="settings" onSubmit={(e) => e.preventDefault()} aria-label={`${type} ${node.id} settings`}>
      <h2>
        <span className={`type-chip snode-${type.toLowerCase()}`}>{type}</span> {node.id}
      </h2>
      <p className="muted small">{TYPE_HELP[type]}</p>
      {problems.map((p, i) => (
        <p key={i} className="field-error" role="alert">
          ⚠ {p.path ? <span className="mono">{p.path}: </span> : null}
          {p.message}
        </p>
      ))}
      <Field label="Node id" id="node-id" error={idError}>
        <input id="node-id" value={idDraft} onChange={(e) => setIdDraft(e.target.value)} onBlur={commitId} onKeyDown={(e) => e.key === "Enter" && commitId()} />
      </Field>
      <Field label="Label" id="node-label">
        <input id="node-label" value={d.label ?? ""} onChange={(e) => set(["label"])(e.target.value)} />
      </Field>
      {type === "Worker" && (
        <>
          <Field label="Webhook URL" id="node-url" hint="stitchd POSTs the work here; your service calls back.">
            <input id="node-url" type="url" placeholder="https://worker.example.com/score" value={d.webhookUrl ?? ""} onChange={(e) => set(["webhookUrl"])(e.target.value)} />
          </Field>
          <Field label="Timeout (seconds)" id="node-timeout" hint="Without a callback or heartbeat by then, the attempt fails. Default 300.">
            <input id="node-timeout" type="number" min={1} value={d.timeoutSeconds ?? ""} onChange={(e) => set(["timeoutSeconds"])(num(e.target.value))} />
          </Field>
          <fieldset>
            <legend>Retry</legend>
            <Field label="Max attempts" id="node-attempts" hint="Default 3.">
              <input id="node-attempts" type="number" min={1} value={d.retry?.maxAttempts ?? ""} onChange={(e) => set(["retry", "maxAttempts"])(num(e.target.value))} />
            </Field>
            <Field label="Backoff" id="node-backoff">
              <select id="node-backoff" value={d.retry?.backoff ?? ""} onChange={(e) => set(["retry", "backoff"])(e.target.value)}>
                <option value="">default (exponential)</option>
                <option value="exponential">exponential</option>
                <option value="fixed">fixed</option>
              </select>
            </Field>
            <Field label="Initial delay (ms)" id="node-initial">
              <input id="node-initial" type="number" min={0} value={d.retry?.initialDelayMs ?? ""} onChange={(e) => set(["retry", "initialDelayMs"])(num(e.target.value))} />
            </Field>
            <Field label="Max delay (ms)" id="node-maxdelay">
              <input id="node-maxdelay" type="number" min={0} value={d.retry?.maxDelayMs ?? ""} onChange={(e) => set(["retry", "maxDelayMs"])(num(e.target.value))} />
            </Field>
          </fieldset>
        </>
      )}
      {type === "UX" && (
        <Field label="Prompt" id="node-prompt" hint="What the person is asked in the approvals inbox.">
          <textarea id="node-prompt" rows={3} value={d.prompt ?? ""} onChange={(e) => set(["prompt"])(e.target.value)} />
        </Field>
      )}
      {type === "Splitter" && (
        <Field label="Array path" id="node-array" hint="A gjson path into the input, e.g. contacts or lead.contacts. One parallel path per item.">
          <input id="node-array" className="mono" value={d.arrayPath ?? ""} onChange={(e) => set(["arrayPath"])(e.target.value)} />
        </Field>
      )}
      {(type === "Worker" || type === "UX") &&
        (["onSuccess", "onFailure"] as const).map((when) => (
          <fieldset key={when}>
            <legend>Entity movement {when === "onSuccess" ? "on success" : "on failure"}</legend>
            <Field label="Move to section" id={`node-${when}-section`}>
              {sections ? (
                <select
                  id={`node-${when}-section`}
                  value={d.entityMovement?.[when]?.targetSectionId ?? ""}
                  onChange={(e) => set(["entityMovement", when, "targetSectionId"])(e.target.value)}
                >
                  <option value="">Do not move</option>
                  {sections.map((s) => (
                    <option key={s.id} value={s.id}>
                      {s.name}
                    </option>
                  ))}
                </select>
              ) : (
                <input
                  id={`node-${when}-section`}
                  placeholder="section id (choose a board for a list)"
                  value={d.entityMovement?.[when]?.targetSectionId ?? ""}
                  onChange={(e) => set(["entityMovement", when, "targetSectionId"])(e.target.value)}
                />
              )}
            </Field>
            <Field label="Complete as" id={`node-${when}-as`}>
              <select id={`node-${when}-as`} value={d.entityMovement?.[when]?.completeAs ?? ""} onChange={(e) => set(["entityMovement", when, "completeAs"])(e.target.value)}>
                <option value="">—</option>
                <option value="success">success</option>
                <option value="failure">failure</option>
                <option value="neutral">neutral</option>
              </select>
            </Field>
            <Field label="Set entity type" id={`node-${when}-type`}>
              <input id={`node-${when}-type`} placeholder="e.g. customer" value={d.entityMovement?.[when]?.setEntityType ?? ""} onChange={(e) => set(["entityMovement", when, "setEntityType"])(e.target.value)} />
            </Field>
          </fieldset>
        ))}
      {targets.length > 0 && (
        <fieldset>
          <legend>Connect</legend>
          <div className="row">
            <label htmlFor="node-connect" className="sr-only">
              Connect {node.id} to
            </label>
            <select id="node-connect" value={target} onChange={(e) => setTarget(e.target.value)}>
              <option value="">Connect to…</option>
              {targets.map((n) => (
                <option key={n.id} value={n.id}>
                  {n.id}
                </option>
              ))}
            </select>
            <button
              type="button"
              className="btn small"
              disabled={!target}
              onClick={() => {
                onConnect(target);
                setTarget("");
              }}
            >
              Add edge
            </button>
          </div>
        </fieldset>
      )}
      <button type="button" className="btn danger" onClick={() => onDelete(node.id)}>
        Delete node
      </button>
    </form>
  );
}

interface EdgeProps {
  edge: Edge;
  problems: Problem[];
  onChange: (id: string, data: Record<string, any>) => void;
  onDelete: (id: string) => void;
}

// EdgeSettings edits an edge's mapping: target key → gjson path into the
// upstream output. With a mapping, the edge contributes only those keys.
export function EdgeSettings({ edge, problems, onChange, onDelete }: EdgeProps) {
  const mapping: Record<string, string> = ((edge.data as any)?.mapping as Record<string, string>) ?? {};
  const [rows, setRows] = useState<[string, string][]>(() => Object.entries(mapping));
  const commit = (next: [string, string][]) => {
    setRows(next);
    const m: Record<string, string> = {};
    for (const [k, v] of next) if (k.trim()) m[k.trim()] = v;
    const data = { ...((edge.data as any) ?? {}) };
    if (Object.keys(m).length) data.mapping = m;
    else delete data.mapping;
    onChange(edge.id, data);
  };
  return (
    <form className="settings" onSubmit={(e) => e.preventDefault()} aria-label={`Edge ${edge.id} settings`}>
      <h2>
        Edge <span className="mono">{edge.id}</span>
      </h2>
      <p className="muted small">
        {edge.source} → {edge.target}
      </p>
      {problems.map((p, i) => (
        <p key={i} className="field-error" role="alert">
          ⚠ {p.path ? <span className="mono">{p.path}: </span> : null}
          {p.message}
        </p>
      ))}
      <fieldset>
        <legend>Mapping</legend>
        <p className="muted small">
          Without a mapping, the upstream output is merged into the input as is. With one, each key gets the value at a gjson path into the upstream
          output (<code>@this</code> is the whole output).
        </p>
        {rows.map(([k, v], i) => (
          <div className="row" key={i}>
            <label className="sr-only" htmlFor={`map-k-${i}`}>
              Key {i + 1}
            </label>
            <input id={`map-k-${i}`} placeholder="input key" value={k} onChange={(e) => commit(rows.map((r, j) => (j === i ? [e.target.value, r[1]] : r)))} />
            <span aria-hidden="true">←</span>
            <label className="sr-only" htmlFor={`map-v-${i}`}>
              Path {i + 1}
            </label>
            <input id={`map-v-${i}`} className="mono" placeholder="path, e.g. @this" value={v} onChange={(e) => commit(rows.map((r, j) => (j === i ? [r[0], e.target.value] : r)))} />
            <button type="button" className="btn ghost small" aria-label={`Remove mapping ${k || i + 1}`} onClick={() => commit(rows.filter((_, j) => j !== i))}>
              ×
            </button>
          </div>
        ))}
        <button type="button" className="btn small" onClick={() => setRows([...rows, ["", ""]])}>
          Add mapping
        </button>
      </fieldset>
      <button type="button" className="btn danger" onClick={() => onDelete(edge.id)}>
        Delete edge
      </button>
    </form>
  );
}

function Field({ label, id, hint, error, children }: { label: string; id: string; hint?: string; error?: string | null; children: React.ReactNode }) {
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children}
      {hint && <p className="hint">{hint}</p>}
      {error && (
        <p className="field-error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}
