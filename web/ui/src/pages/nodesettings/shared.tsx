// The parts every node's settings share: a field with its label and
// hint, the server's messages about a field, a retry policy, and the
// helpers that edit a node's data.
import type { Edge } from "@xyflow/react";
import type { ReactNode } from "react";
import type { Problem } from "../../api";
import { PlainProblem } from "../../components/PlainProblem";
import type { Sample } from "../../components/sample";
import type { Scope } from "../../components/scope";
import type { CanvasNode } from "../../graph";
import { problemText } from "../../graph";

export type Problems = (Problem & { stale?: boolean })[];

// FieldsProps is what a type's fields are given: the node's data, how to
// replace it, the server's messages by field and the node's id.
export interface FieldsProps {
  data: Record<string, any>;
  onChange: (d: Record<string, any>) => void;
  problemsAt: (field: string) => Problems;
  nodeId: string;
}

// PanelProps is what a node type's panel is given: the node, its data and
// how to change it, the server's messages by field, and the step's data.
export interface PanelProps {
  node: CanvasNode;
  data: Record<string, any>;
  // set sets one field (a path into the data).
  set: (path: string[]) => (v: any) => void;
  // onChange replaces the node's data.
  onChange: (data: Record<string, any>) => void;
  problemsAt: (field: string) => Problems;
  scope: Scope;
  sample: Sample;
  flowId: string | null;
  graph: () => unknown;
  outgoing: Edge[];
  sections: { id: string; name: string }[] | null;
  onRenameOutcome: (node: string, from: string, to: string) => void;
}

// setIn returns a copy of obj with path set to v; empty values and empty
// objects are dropped so the saved graph stays minimal.
export function setIn(obj: Record<string, any>, path: string[], v: any): Record<string, any> {
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

export const num = (s: string) => (s.trim() === "" ? undefined : Number(s));

// put sets (or, for an empty value, deletes) one key of data.
export function put(data: Record<string, any>, k: string, v: any): Record<string, any> {
  const next = { ...data };
  if (v === undefined || v === "" || (typeof v === "number" && isNaN(v))) delete next[k];
  else next[k] = v;
  return next;
}

// withoutKeys is obj (a schema's properties, or data) without keys.
export function withoutKeys(obj: Record<string, any>, keys: string[]): Record<string, any> {
  const out = { ...obj };
  if (out.properties && typeof out.properties === "object") {
    out.properties = { ...out.properties };
    for (const k of keys) delete out.properties[k];
    if (Array.isArray(out.required)) out.required = out.required.filter((r: string) => !keys.includes(r));
    return out;
  }
  for (const k of keys) delete out[k];
  return out;
}

// ServerProblems shows the server's messages about one field, marked
// stale once the field was edited after the save that found them.
export function ServerProblems({ problems, id, src }: { problems: (Problem & { stale?: boolean })[]; id: string; src?: string }) {
  return (
    <>
      {problems.map((p, i) => (
        <p key={i} className={`field-error ${p.stale ? "stale" : ""}`} role="alert" data-check="server">
          ⚠ {p.stale ? "At the last save: " : ""}
          <PlainProblem message={problemText(p.message, id)} path={p.path} src={p.stale ? undefined : src} />
        </p>
      ))}
    </>
  );
}

export function Field({ label, id, hint, error, children }: { label: string; id: string; hint?: string; error?: string | null; children: ReactNode }) {
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

// RetryFields edits a retry policy (a Worker's or an HTTP node's).
export function RetryFields({ retry, set }: { retry: Record<string, any> | undefined; set: (k: string) => (v: any) => void }) {
  return (
    <fieldset>
      <legend>Retry</legend>
      <Field label="Max attempts" id="node-attempts" hint="Default 3.">
        <input id="node-attempts" type="number" min={1} value={retry?.maxAttempts ?? ""} onChange={(e) => set("maxAttempts")(num(e.target.value))} />
      </Field>
      <Field label="Backoff" id="node-backoff">
        <select id="node-backoff" value={retry?.backoff ?? ""} onChange={(e) => set("backoff")(e.target.value)}>
          <option value="">default (exponential)</option>
          <option value="exponential">exponential</option>
          <option value="linear">linear</option>
          <option value="fixed">fixed</option>
        </select>
      </Field>
      <Field label="Initial delay (ms)" id="node-initial">
        <input id="node-initial" type="number" min={0} value={retry?.initialDelayMs ?? ""} onChange={(e) => set("initialDelayMs")(num(e.target.value))} />
      </Field>
      <Field label="Max delay (ms)" id="node-maxdelay">
        <input id="node-maxdelay" type="number" min={0} value={retry?.maxDelayMs ?? ""} onChange={(e) => set("maxDelayMs")(num(e.target.value))} />
      </Field>
    </fieldset>
  );
}
