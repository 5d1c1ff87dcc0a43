// The settings of a UX node (a person decides): the prompt, the
// outcomes, the timeout, who decides, the form and the summary.
import { useState } from "react";
import { span } from "../../components/common";
import { TaskForm } from "../../components/LazyTaskForm";
import { SummaryEditor } from "../../components/SummaryEditor";
import { outcomesOf } from "../../graph";
import { Movement } from "./Movement";
import { OutcomesEditor } from "./UXOutcomes";
import { UXPeople } from "./UXPeople";
import { Field, num, ServerProblems, type PanelProps, type Problems, type FieldsProps } from "./shared";

export function UXPanel({ node, data, set, onChange, problemsAt, outgoing, onRenameOutcome }: PanelProps) {
  return (
    <>
      <Field label="Prompt" id="node-prompt" hint="What the person is asked in the approvals inbox.">
        <textarea id="node-prompt" rows={3} value={data.prompt ?? ""} onChange={(e) => set(["prompt"])(e.target.value)} />
      </Field>
      <OutcomesEditor
        nodeId={node.id}
        data={data}
        outgoing={outgoing}
        onChange={(next, rename) => {
          let nd: Record<string, any> = { ...data, outcomes: next };
          const by = data.entityMovement?.onOutcome;
          if (rename && by?.[rename[0]] && !by[rename[1]]) {
            const { [rename[0]]: moved, ...rest } = by;
            nd = { ...nd, entityMovement: { ...data.entityMovement, onOutcome: { ...rest, [rename[1]]: moved } } };
          }
          if (rename && data.onTimeout === rename[0]) nd.onTimeout = rename[1];
          onChange(nd);
          if (rename) onRenameOutcome(node.id, rename[0], rename[1]);
        }}
      />
      <UXTimeout data={data} onChange={onChange} problemsAt={problemsAt} />
      <UXPeople key={`people-${node.id}`} data={data} onChange={onChange} problemsAt={problemsAt} />
      <UXForm key={`form-${node.id}`} nodeId={node.id} data={data} onChange={onChange} problems={problemsAt("form")} />
      <SummaryEditor
        key={`summary-${node.id}`}
        summary={data.summary}
        onChange={(next) => {
          const { summary: _old, ...rest } = data;
          onChange(next ? { ...rest, summary: next } : rest);
        }}
      />
      {problemsAt("summary").length > 0 && (
        <p className="field-error" role="alert">
          {problemsAt("summary")
            .map((p) => p.message)
            .join("; ")}
        </p>
      )}
    </>
  );
}

// UXByOutcome is a UX node's entity movement by the outcome chosen.
export function UXByOutcome({ data, set, sections }: PanelProps) {
  return (
    <details className="by-outcome" open={!!data.entityMovement?.onOutcome && Object.keys(data.entityMovement.onOutcome).length > 0}>
      <summary>Entity movement by outcome</summary>
      <p className="hint">A movement set for the outcome a person chose replaces the one on success or failure.</p>
      {outcomesOf(data).map((o, i) => (
        <Movement
          key={o}
          legend={`When “${o}” is chosen`}
          idp={`node-outcome-${i}`}
          value={data.entityMovement?.onOutcome?.[o]}
          sections={sections}
          onChange={(field, v) => set(["entityMovement", "onOutcome", o, field])(v)}
        />
      ))}
    </details>
  );
}

// UXTimeout edits how long a UX step waits for a person and what happens
// then: the step fails, or one of its outcomes is chosen for the person.
function UXTimeout({
  data,
  onChange,
  problemsAt,
}: Omit<FieldsProps, "nodeId">) {
  const outcomes = outcomesOf(data);
  const secs = typeof data.timeoutSeconds === "number" ? data.timeoutSeconds : undefined;
  const on = typeof data.onTimeout === "string" ? data.onTimeout : "fail";
  const unknown = on !== "fail" && !outcomes.includes(on);
  return (
    <fieldset className="ux-timeout">
      <legend>Timeout</legend>
      <div className="field">
        <label htmlFor="node-timeout">Timeout (seconds)</label>
        <input
          id="node-timeout"
          type="number"
          min={1}
          step={1}
          placeholder="waits forever"
          value={secs ?? ""}
          aria-invalid={problemsAt("timeoutSeconds").some((p) => !p.stale)}
          onChange={(e) => {
            const v = num(e.target.value);
            const next = { ...data };
            if (v === undefined || isNaN(v)) {
              delete next.timeoutSeconds;
              delete next.onTimeout; // the server refuses an onTimeout without a timeout
            } else next.timeoutSeconds = v;
            onChange(next);
          }}
        />
        <p className="hint">{secs === undefined
            ? "Empty: it waits for a person forever."
            : secs > 0
              ? `If nobody answers within ${span(secs * 1000)}, the step times out.`
              : "A timeout is more than 0 seconds."}</p>
        <ServerProblems problems={problemsAt("timeoutSeconds")} id="" />
      </div>
      {secs !== undefined && (
        <div className="field">
          <label htmlFor="node-ontimeout">On timeout</label>
          <select
            id="node-ontimeout"
            value={on}
            aria-invalid={unknown || problemsAt("onTimeout").some((p) => !p.stale)}
            onChange={(e) => {
              const next = { ...data };
              if (e.target.value === "fail") delete next.onTimeout;
              else next.onTimeout = e.target.value;
              onChange(next);
            }}
          >
            <option value="fail">fail the step</option>
            {(unknown ? [on, ...outcomes] : outcomes).map((o) => (
              <option key={o} value={o}>
                choose “{o}”{outcomes.includes(o) ? "" : " (not offered)"}
              </option>
            ))}
          </select>
          {unknown ? (
            <p className="field-error" role="alert" data-check="local">
              “{on}” is not one of this step's outcomes any more: choose another.
            </p>
          ) : (
            <p className="hint">
              {on === "fail" ? "The step fails (a failure edge takes it on)." : `As if a person chose “${on}”: its edge is taken, the decision is by “timeout”.`}
            </p>
          )}
          <ServerProblems problems={problemsAt("onTimeout")} id="" />
        </div>
      )}
    </fieldset>
  );
}

const FORM_EXAMPLE = {
  type: "object",
  required: ["amount", "reason"],
  properties: {
    amount: { type: "number", minimum: 0, title: "Amount (EUR)" },
    reason: { enum: ["damaged", "late", "other"], title: "Reason" },
    note: { type: "string", maxLength: 500, title: "Note" },
  },
};

// UXForm edits a UX step's form: a JSON Schema (2020-12) of the answer,
// checked as JSON here and compiled by the server when the flow is saved
// (422 invalid_form at its place in the form). A text that is not JSON is
// kept as it is, so saving says so instead of silently keeping the old one.
function UXForm({
  nodeId,
  data,
  onChange,
  problems,
}: {
  nodeId: string;
  data: Record<string, any>;
  onChange: (d: Record<string, any>) => void;
  problems: Problems;
}) {
  const f = data.form;
  const [text, setText] = useState(f === undefined || f === null ? "" : typeof f === "string" ? f : JSON.stringify(f, null, 2));
  const [preview, setPreview] = useState<any>(undefined);
  let parsed: any = undefined;
  let jsonError: string | null = null;
  if (text.trim()) {
    try {
      parsed = JSON.parse(text);
      if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) jsonError = "A form is a JSON object (a JSON Schema), e.g. {\"type\": \"object\", …}.";
    } catch (e) {
      jsonError = `Not JSON: ${(e as Error).message}`;
    }
  }
  const update = (t: string) => {
    setText(t);
    const next = { ...data };
    if (!t.trim()) delete next.form;
    else {
      try {
        next.form = JSON.parse(t);
      } catch {
        next.form = t; // saving is refused with the server's message
      }
    }
    onChange(next);
  };
  return (
    <fieldset className="ux-form">
      <legend>Answer form</legend>
      <p className="hint">
        Optional: a JSON Schema of the answer. The inbox shows it as a form, and stitchd refuses an answer that does not fit. See docs/forms.md.
      </p>
      <div className="field">
        <label htmlFor="node-form">Form (JSON Schema)</label>
        <textarea
          id="node-form"
          className="mono"
          rows={8}
          spellCheck={false}
          placeholder='{"type": "object", "required": ["amount"], "properties": {"amount": {"type": "number", "minimum": 1}}}'
          value={text}
          aria-invalid={!!jsonError || problems.some((p) => !p.stale)}
          onChange={(e) => update(e.target.value)}
        />
        {jsonError && (
          <p className="field-error" role="alert" data-check="local">
            {jsonError}
          </p>
        )}
        <ServerProblems problems={problems} id="" />
        {!text.trim() && (
          <button type="button" className="btn small" onClick={() => update(JSON.stringify(FORM_EXAMPLE, null, 2))}>
            Start from an example
          </button>
        )}
      </div>
      {parsed && !jsonError && (
        <details className="form-preview">
          <summary>Preview</summary>
          <TaskForm id={`preview-${nodeId}`} schema={parsed} value={preview} onChange={setPreview} serverProblems={[]} />
        </details>
      )}
    </fieldset>
  );
}
