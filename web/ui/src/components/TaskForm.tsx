// TaskForm renders a UX node's form (a JSON Schema 2020-12) with
// react-jsonschema-form. Checking it here is a convenience: the server
// checks every answer, and its problems (400 form_invalid, paths like
// $.output.amount) are shown next to their fields too.
// Form straight from its module: the package index also exports a test
// helper that imports @rjsf/validator-ajv8, which this UI does not use.
import Form from "@rjsf/core/lib/components/Form.js";
import type { ErrorSchema, RJSFSchema } from "@rjsf/utils";
import { forwardRef, useEffect, useImperativeHandle, useMemo, useRef } from "react";
import type { Problem } from "../api";
import { checkable as canCheck, formValidator } from "./validator";

// pathOf splits a problem's path ($.output.amount, $.output.tags[1],
// $.output["a b"]) into the answer's keys; null when it is not inside
// $.output.
export function pathOf(p: string): string[] | null {
  if (p !== "$.output" && !p.startsWith("$.output.") && !p.startsWith("$.output[")) return null;
  const out: string[] = [];
  const re = /\.([^.[\]]+)|\[(\d+)\]|\["((?:[^"\\]|\\.)*)"\]|\['((?:[^'\\]|\\.)*)'\]/g;
  const rest = p.slice("$.output".length);
  let m: RegExpExecArray | null;
  let at = 0;
  while ((m = re.exec(rest))) {
    if (m.index !== at) return out;
    at = re.lastIndex;
    out.push(m[1] ?? m[2] ?? m[3] ?? m[4]);
  }
  return out;
}

// errorSchemaOf turns the server's problems into rjsf's error tree: each
// message at its field; "missing property 'x'" at the object that lacks
// it is moved to the field x, where a person looks for it.
export function errorSchemaOf(problems: Problem[]): { schema: ErrorSchema; unplaced: string[] } {
  const schema: Record<string, any> = {};
  const unplaced: string[] = [];
  const add = (path: string[], msg: string) => {
    let node = schema;
    for (const k of path) node = node[k] ??= {};
    (node.__errors ??= []).push(msg);
  };
  for (const p of problems) {
    const path = pathOf(p.path ?? "");
    if (!path) {
      unplaced.push(p.path ? `${p.path}: ${p.message}` : p.message);
      continue;
    }
    const missing = /^missing propert(?:y|ies) (.+)$/.exec(p.message);
    if (missing) {
      for (const name of missing[1].split(/,\s*/)) add([...path, name.replace(/^'|'$/g, "")], "is required");
      continue;
    }
    add(path, p.message);
  }
  return { schema: schema as ErrorSchema, unplaced };
}

// uiSchemaOf shows a long text field as a text area: a property whose
// contentMediaType is text (a Code step's JavaScript), or longer than a
// line can show.
function uiSchemaOf(schema: Record<string, any>): Record<string, any> {
  const ui: Record<string, any> = {};
  for (const [k, p] of Object.entries<any>(schema?.properties ?? {})) {
    if (p?.type === "string" && ((typeof p.contentMediaType === "string" && p.contentMediaType.startsWith("text/")) || (p.maxLength ?? 0) > 1000)) {
      ui[k] = { "ui:widget": "textarea", "ui:options": { rows: p.contentMediaType ? 12 : 5 } };
    }
  }
  return ui;
}

// firstWrongField is the first field rjsf marks as wrong (its own check's
// or the server's problems).
function firstWrongField(box: HTMLElement | null): HTMLElement | null {
  return box?.querySelector<HTMLElement>(".has-error :is(input, select, textarea)") ?? null;
}

export interface TaskFormHandle {
  // check runs the form's own checks and shows their messages; false when
  // something is wrong.
  check: () => boolean;
}

export const TaskForm = forwardRef<
  TaskFormHandle,
  { id: string; schema: Record<string, any>; value: any; onChange: (v: any) => void; serverProblems: Problem[]; disabled?: boolean; inside?: boolean }
>(function TaskForm({ id, schema, value, onChange, serverProblems, disabled, inside }, ref) {
  const form = useRef<Form<any, RJSFSchema, any>>(null);
  const checkable = useMemo(() => canCheck(schema), [schema]);
  const { schema: extra, unplaced } = useMemo(() => errorSchemaOf(serverProblems), [serverProblems]);
  const uiSchema = useMemo(() => uiSchemaOf(schema), [schema]);
  const box = useRef<HTMLDivElement>(null);
  // A refused answer takes the focus to its first wrong field: the
  // person (the keyboard's and the screen reader's too) lands where to
  // fix it, not under the form at "see the fields marked above".
  const focusFirstError = () => window.setTimeout(() => firstWrongField(box.current)?.focus(), 0);
  useImperativeHandle(
    ref,
    () => ({
      check: () => {
        const ok = !checkable || (form.current?.validateForm() ?? true);
        if (!ok) focusFirstError();
        return ok;
      },
    }),
    [checkable],
  );
  useEffect(() => {
    if (serverProblems.length) focusFirstError();
  }, [serverProblems]);
  return (
    <div className="task-form" ref={box} data-form-checked={checkable ? "client" : "server"}>
      <Form
        ref={form}
        idPrefix={`f-${id}`}
        schema={schema as RJSFSchema}
        uiSchema={uiSchema}
        validator={formValidator}
        formData={value}
        onChange={(e) => onChange(e.formData)}
        extraErrors={serverProblems.length ? extra : undefined}
        showErrorList={false}
        noHtml5Validate
        noValidate={!checkable}
        disabled={disabled}
        onSubmit={() => undefined}
        tagName={inside ? "div" : undefined}
        onError={() => undefined}
      >
        {/* The outcome buttons below the form send it. */}
        <></>
      </Form>
      {unplaced.map((m, i) => (
        <p key={i} className="field-error" role="alert" data-server-problem>
          {m}
        </p>
      ))}
    </div>
  );
});
