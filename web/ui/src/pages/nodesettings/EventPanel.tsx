// The settings of an Event node (waits for an event posted to
// /api/v1/events).
import { span } from "../../components/common";
import { Field, num, put, ServerProblems, type PanelProps, type FieldsProps } from "./shared";

export const EVENT_FIELDS = ["event", "key", "timeoutSeconds", "onTimeout"];

// EventFields edits an Event node: the event's name, the key expression
// (which run's wait an event completes) and an optional timeout.
export function EventFields({
  data,
  onChange,
  problemsAt,
  nodeId,
}: FieldsProps) {
  const set = (k: string) => (v: any) => onChange(put(data, k, v));
  const name = typeof data.event === "string" ? data.event : "";
  const key = typeof data.key === "string" ? data.key : "";
  const t = typeof data.timeoutSeconds === "number" ? data.timeoutSeconds : null;
  return (
    <fieldset className="event-fields" aria-label="Event">
      <legend>Event</legend>
      <Field label="Event name" id="node-event" hint="The name events are posted with, e.g. payment.received.">
        <input
          id="node-event"
          className="mono"
          placeholder="payment.received"
          value={name}
          maxLength={200}
          aria-invalid={problemsAt("event").some((p) => !p.stale)}
          onChange={(e) => set("event")(e.target.value)}
        />
      </Field>
      <ServerProblems problems={problemsAt("event")} id={nodeId} />
      <Field label="Key" id="node-event-key" hint="An expression over input, run and entity whose value picks this run's event, e.g. input.order_id.">
        <input
          id="node-event-key"
          className="mono"
          placeholder="input.order_id"
          spellCheck={false}
          value={key}
          aria-invalid={problemsAt("key").some((p) => !p.stale)}
          onChange={(e) => set("key")(e.target.value)}
        />
      </Field>
      <ServerProblems problems={problemsAt("key")} id={nodeId} />
      <Field
        label="Timeout (seconds, optional)"
        id="node-event-timeout"
        hint={t && t > 0 ? `Without the event within ${span(t * 1000)}, the step fails (a failure edge can take it on).` : "Without a timeout the step waits as long as it takes."}
      >
        <input id="node-event-timeout" type="number" min={1} value={data.timeoutSeconds ?? ""} onChange={(e) => set("timeoutSeconds")(num(e.target.value))} />
      </Field>
      <ServerProblems problems={[...problemsAt("timeoutSeconds"), ...problemsAt("onTimeout")]} id={nodeId} />
      {name.trim() && (
        <p className="hint" data-event-how>
          Completed by <code>POST /api/v1/events</code> <code>{`{"name": "${name.trim()}", "key": "…", "payload": {…}}`}</code>; the payload becomes this step's
          output. An event posted before the wait begins is kept (24 h by default).
        </p>
      )}
    </fieldset>
  );
}

export function EventPanel({ node, data, onChange, problemsAt }: PanelProps) {
  return <EventFields data={data} onChange={onChange} problemsAt={problemsAt} nodeId={node.id} />;
}
