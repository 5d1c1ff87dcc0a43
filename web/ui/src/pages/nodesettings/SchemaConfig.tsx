// A node type without a panel of its own (one added to stitchd) is set up
// by the form its config schema describes: its scripts (strings whose
// contentMediaType is JavaScript, a Code step's source) get the code
// editor, the form shows the rest.
import { TaskForm } from "../../components/LazyTaskForm";
import { ExpressionInput } from "../../components/ExpressionInput";
import type { Scope } from "../../components/scope";
import type { NodeTypeInfo } from "../../nodetypes";
import { withoutKeys, type Problems } from "./shared";

export interface SchemaConfig {
  // codeProps: the scripts, by key, with their schemas.
  codeProps: [string, any][];
  // kept: the keys the form does not show (label and description have
  // their fields in the shell; the scripts theirs).
  kept: string[];
  // form: the schema the form shows, or null for a type with a panel.
  form: Record<string, any> | null;
}

export function schemaConfig(info: NodeTypeInfo | undefined): SchemaConfig {
  const own = ["label", "description", "entityMovement", "join"];
  const codeProps: [string, any][] =
    info && !info.panel ? Object.entries<any>(info.configSchema?.properties ?? {}).filter(([, p]) => p?.type === "string" && p.contentMediaType === "text/javascript") : [];
  const kept = [...own, ...codeProps.map(([k]) => k)];
  const form = info && !info.panel ? withoutKeys(info.configSchema, kept) : null;
  return { codeProps, kept, form };
}

// CodeFields are the scripts' editors, with the step's data to complete
// and to insert from the data panel.
export function CodeFields({
  codeProps,
  data,
  set,
  scope,
  problemsAt,
}: {
  codeProps: [string, any][];
  data: Record<string, any>;
  set: (path: string[]) => (v: any) => void;
  scope: Scope;
  problemsAt: (field: string) => Problems;
}) {
  return (
    <>
      {codeProps.map(([k, p]) => (
        <div className="field" key={k} data-code-field={k}>
          <label htmlFor={`node-code-${k}`}>{p.title ?? k}</label>
          <ExpressionInput
            id={`node-code-${k}`}
            label={p.title ?? k}
            value={data[k] ?? ""}
            onChange={set([k])}
            scope={scope}
            rows={10}
            language="javascript"
            invalid={problemsAt(k).length > 0}
          />
          <p className="hint">Names: input, run, steps, vars, item, entity — click a field in the data panel to insert it.</p>
        </div>
      ))}
    </>
  );
}

// SchemaForm is the form of the rest of the config; the kept keys and the
// pinned sample are left as they are.
export function SchemaForm({
  type,
  nodeId,
  config,
  data,
  onChange,
}: {
  type: string;
  nodeId: string;
  config: SchemaConfig;
  data: Record<string, any>;
  onChange: (data: Record<string, any>) => void;
}) {
  const { kept, form } = config;
  if (!form) return null;
  return (
    <div className="type-config" data-type-config={type}>
      <TaskForm
        inside
        id={`cfg-${nodeId}`}
        schema={form}
        value={withoutKeys(data, [...kept, "_problems", "_run", "_pinned"])}
        onChange={(v) => onChange({ ...(v ?? {}), ...Object.fromEntries([...kept, "_pinned"].filter((k) => data[k] !== undefined).map((k) => [k, data[k]])) })}
        serverProblems={[]}
      />
    </div>
  );
}
