// The settings of a Respond node (what a webhook's caller is answered).
import { BodyField } from "./BodyField";
import { Field, num, put, ServerProblems, type PanelProps, type FieldsProps } from "./shared";

export const RESPOND_FIELDS = ["status", "body"];

// RespondFields edits a Respond node: the status and the body it answers
// the webhook request waiting for the run with (a trigger with respond
// "wait"); the body is rendered as an HTTP node's.
export function RespondFields(props: FieldsProps) {
  const { data, onChange, problemsAt, nodeId } = props;
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
      <BodyField
        {...props}
        id="node-respond-body"
        name="respond-body-mode"
        placeholder={{ json: '{"accepted": "{{ input.order_id }}"}', text: "Thanks, {{ input.name }}" }}
        hint={{
          json: "Answered as JSON; {{ expr }} templates over input, run, steps and vars are filled in (a string that is exactly one {{ expr }} takes the value with its type).",
          text: "Answered as text; {{ expr }} templates are filled in.",
        }}
      />
    </fieldset>
  );
}

export function RespondPanel({ node, data, onChange, problemsAt }: PanelProps) {
  return <RespondFields data={data} onChange={onChange} problemsAt={problemsAt} nodeId={node.id} />;
}
