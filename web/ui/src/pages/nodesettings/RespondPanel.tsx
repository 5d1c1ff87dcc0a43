// The settings of a Respond node (what a webhook's caller is answered).
import { useTemplateTarget } from "../../components/exprTarget";
import { useBodyDraft } from "./body";
import { Field, num, put, ServerProblems, type PanelProps, type FieldsProps } from "./shared";

export const RESPOND_FIELDS = ["status", "body"];

// RespondFields edits a Respond node: the status and the body it answers
// the webhook request waiting for the run with (a trigger with respond
// "wait"); the body is rendered as an HTTP node's.
export function RespondFields({
  data,
  onChange,
  problemsAt,
  nodeId,
}: FieldsProps) {
  const { mode, draft, jsonError, switchBody, typeBody } = useBodyDraft(data, onChange);
  const bodyTarget = useTemplateTarget<HTMLTextAreaElement>((v) => typeBody(v));
  const status = typeof data.status === "number" ? data.status : 200;
  const badStatus = !Number.isInteger(status) || status < 100 || status > 599;
  return (
    <fieldset className="respond-fields" aria-label="Answer to the caller">
      <legend>Answer</legend>
      <p className="hint">
        Answers the webhook request waiting for this run (a trigger with “wait for the run”) now; the run goes on. Without a caller waiting, the
        step just passes its input on.
      </p>
      <Field label="HTTP status" id="node-respond-status" error={badStatus ? "A status from 100 to 599." : null}>
        <input
          id="node-respond-status"
          type="number"
          min={100}
          max={599}
          value={data.status ?? ""}
          placeholder="200"
          onChange={(e) => onChange(put(data, "status", num(e.target.value)))}
        />
      </Field>
      <ServerProblems problems={problemsAt("status")} id={nodeId} />
      <div className="field body-field">
        <label htmlFor="node-respond-body">Body</label>
        <div className="tabs" role="radiogroup" aria-label="Body kind">
          {(["none", "json", "text"] as const).map((m) => (
            <label key={m} className={mode === m ? "active" : ""}>
              <input type="radio" name="respond-body-mode" value={m} checked={mode === m} onChange={() => switchBody(m)} />{" "}
              {m === "none" ? "none" : m === "json" ? "JSON" : "text"}
            </label>
          ))}
        </div>
        {mode !== "none" && (
          <textarea
            id="node-respond-body"
            ref={bodyTarget.ref}
            onFocus={bodyTarget.onFocus}
            className="mono"
            rows={5}
            spellCheck={false}
            placeholder={mode === "json" ? '{"accepted": "{{ input.order_id }}"}' : "Thanks, {{ input.name }}"}
            value={draft}
            aria-invalid={!!jsonError || problemsAt("body").some((p) => !p.stale)}
            onChange={(e) => typeBody(e.target.value)}
          />
        )}
        <p className="hint">
          {mode === "json"
            ? "Answered as JSON; {{ expr }} templates over input, run, steps and vars are filled in (a string that is exactly one {{ expr }} takes the value with its type)."
            : mode === "text"
              ? "Answered as text; {{ expr }} templates are filled in."
              : "No body."}
        </p>
        {jsonError && (
          <p className="field-error" role="alert" data-check="local">
            Not valid JSON: {jsonError}. The saved body is the last valid one until this parses.
          </p>
        )}
        <ServerProblems problems={problemsAt("body")} id={nodeId} />
      </div>
    </fieldset>
  );
}

export function RespondPanel({ node, data, onChange, problemsAt }: PanelProps) {
  return <RespondFields data={data} onChange={onChange} problemsAt={problemsAt} nodeId={node.id} />;
}
