// A broker trigger: each message of a NATS JetStream subject or a
// RabbitMQ queue starts a run (or is posted as an event). It shows
// whether stitchd is connected and its last error.
import { useState, type FormEvent } from "react";
import { api, type BrokerTrigger, type Problem } from "../../api";
import { ago, FormErrors } from "../../components/common";
import { EditButton, ToggleButton, TriggerCard, useTriggerAct, useTriggerEdit, type TriggerCardProps } from "./TriggerCard";
import { FormButtons, useTriggerForm } from "./TriggerForm";

export function BrokerCard({ t, ...props }: { t: BrokerTrigger } & TriggerCardProps) {
  const { editing, setEditing, saved } = useTriggerEdit(props);
  const act = useTriggerAct(props);
  const source = t.kind === "nats" ? t.subject : t.queue;
  const state = !t.enabled ? "disabled" : t.connected ? "connected" : "not connected";
  return (
    <TriggerCard
      id={t.id}
      kind="broker"
      disabled={!t.enabled}
      attrs={{ "data-kind": t.kind, "data-connected": String(t.connected) }}
      act={act}
      remove={{ question: `Delete this ${t.kind} trigger? Runs it started are kept; new messages wait in the broker.`, notice: "Broker trigger deleted.", lock: true }}
      head={
        <>
          <span className="trigger-kind" aria-hidden="true">
            ⇶
          </span>
          <strong>{t.kind === "nats" ? "NATS" : "RabbitMQ"}</strong>
          <code data-source>{source}</code>
          <span
            className={`chip ${t.connected ? "chip-ok" : "chip-warn"}`}
            data-state
            title={t.enabled ? (t.connected ? "A stitchd process is consuming it" : "No stitchd process is connected: see the error below") : "Not consumed while disabled"}
          >
            {state}
          </span>
        </>
      }
      actions={
        <>
          <ToggleButton id={t.id} enabled={t.enabled} act={act} said={{ on: "Broker trigger enabled.", off: "Broker trigger disabled: its messages wait in the broker." }} />
          <EditButton editing={editing} setEditing={setEditing} busy={act.busy} />
        </>
      }
      after={
        editing && (
          <BrokerForm
            flowId={t.flow_id}
            initial={t}
            onDone={() => saved("Broker trigger saved: its consumers restart with the new settings.")}
            onCancel={() => setEditing(false)}
          />
        )
      }
    >
      <dl className="kv trigger-kv">
        <dt>Broker</dt>
        <dd>
          <code data-url>{t.url}</code>
        </dd>
        {t.kind === "nats" && (
          <>
            <dt>Consumer</dt>
            <dd className="small">
              durable <code>{t.durable || `stitchd-${t.id}`}</code>
              {t.stream ? (
                <>
                  {" "}
                  on stream <code>{t.stream}</code>
                </>
              ) : null}{" "}
              · delivers {t.deliver === "new" ? "new messages" : "all"} · redelivered after {t.ack_wait_seconds ?? 30}s unacknowledged
            </dd>
          </>
        )}
        <dt>Each message</dt>
        <dd data-as>
          {t.as === "event" ? (
            <>
              is posted as the event <code>{t.name}</code>, keyed by {t.key_header ? <>the header <code>{t.key_header}</code></> : <code>{t.key}</code>}
            </>
          ) : (
            "starts a run, its body as input"
          )}
        </dd>
        <dt>Processes</dt>
        <dd data-consumers>
          {t.consumers.length === 0 ? (
            <span className="muted">none consuming</span>
          ) : (
            `${t.consumers.filter((c) => c.connected).length} of ${t.consumers.length} connected`
          )}
        </dd>
      </dl>
      {t.last_error && (
        <div className={`banner ${t.connected ? "subtle" : "warn"}`} role="note" data-last-error>
          ⚠ {t.last_error}
          {t.last_error_at && <span className="muted small"> · {ago(t.last_error_at)}</span>}
        </div>
      )}
    </TriggerCard>
  );
}

const BROKER_FIELDS = ["kind", "url", "subject", "stream", "durable", "deliver", "ack_wait_seconds", "queue", "prefetch", "as", "name", "key", "key_header", "ttl_seconds", "enabled"];

// BrokerForm creates a broker trigger (POST /flows/{id}/triggers) or edits
// one (PATCH /triggers/{id}); the server's 422 messages are shown under
// their fields.
export function BrokerForm({ flowId, initial, onDone, onCancel }: { flowId: string; initial?: BrokerTrigger; onDone: () => void; onCancel: () => void }) {
  const p = initial ? `broker-${initial.id.slice(0, 8)}` : "broker";
  const [kind, setKind] = useState<"nats" | "amqp">(initial?.kind ?? "nats");
  const [url, setUrl] = useState(initial?.url ?? "nats://127.0.0.1:4222");
  const [subject, setSubject] = useState(initial?.subject ?? "");
  const [stream, setStream] = useState(initial?.stream ?? "");
  const [durable, setDurable] = useState(initial?.durable ?? "");
  const [deliver, setDeliver] = useState<string>(initial?.deliver ?? "all");
  const [ackWait, setAckWait] = useState(String(initial?.ack_wait_seconds ?? 30));
  const [queue, setQueue] = useState(initial?.queue ?? "");
  const [prefetch, setPrefetch] = useState(String(initial?.prefetch ?? 32));
  const [as, setAs] = useState<"run" | "event">(initial?.as ?? "run");
  const [name, setName] = useState(initial?.name ?? "");
  const [keyFrom, setKeyFrom] = useState<"expression" | "header">(initial?.key_header ? "header" : "expression");
  const [key, setKey] = useState(initial?.key ?? "");
  const [keyHeader, setKeyHeader] = useState(initial?.key_header ?? "");
  const [enabled, setEnabled] = useState(initial?.enabled ?? true);
  const { problems, setProblems, error, setError, busy, save, at, msgs, clear } = useTriggerForm();
  const other = problems.filter((x) => !BROKER_FIELDS.includes(x.path));
  const whole = (v: string) => (/^\d+$/.test(v.trim()) ? Number(v.trim()) : v.trim() === "" ? 0 : NaN);

  async function submit(e: FormEvent) {
    e.preventDefault();
    const body: Record<string, unknown> = { url: url.trim(), as, enabled };
    if (kind === "nats") {
      Object.assign(body, { subject: subject.trim(), stream: stream.trim(), durable: durable.trim(), deliver, ack_wait_seconds: whole(ackWait) });
    } else {
      Object.assign(body, { queue: queue.trim(), prefetch: whole(prefetch) });
    }
    if (as === "event") {
      Object.assign(body, { name: name.trim(), key: keyFrom === "expression" ? key.trim() : "", key_header: keyFrom === "header" ? keyHeader.trim() : "" });
    } else if (initial) {
      Object.assign(body, { name: "", key: "", key_header: "" });
    }
    for (const [k, v] of Object.entries(body)) {
      if (typeof v === "number" && Number.isNaN(v)) {
        setError(null);
        setProblems([{ code: "local", path: k, message: "a whole number" } as Problem]);
        return;
      }
    }
    await save(() => (initial ? api("PATCH", `/triggers/${initial.id}`, body) : api("POST", `/flows/${flowId}/triggers`, { kind, ...body })), onDone);
  }

  const text = (field: string, label: string, value: string, set: (v: string) => void, hint?: string, placeholder?: string) => (
    <div className="field">
      <label htmlFor={`${p}-${field}`}>{label}</label>
      <input
        id={`${p}-${field}`}
        className="mono"
        spellCheck={false}
        placeholder={placeholder}
        value={value}
        aria-invalid={at(field).length > 0}
        onChange={(e) => {
          set(e.target.value);
          clear(field);
        }}
      />
      {hint && <p className="hint">{hint}</p>}
      {msgs(field)}
    </div>
  );

  return (
    <form className="broker-form" aria-label={initial ? "Edit broker trigger" : "New broker trigger"} onSubmit={submit} noValidate>
      {!initial && (
        <div className="field">
          <label htmlFor={`${p}-kind`}>Broker</label>
          <select
            id={`${p}-kind`}
            value={kind}
            onChange={(e) => {
              const k = e.target.value as "nats" | "amqp";
              setKind(k);
              if (url === "nats://127.0.0.1:4222" || url === "amqp://guest:guest@127.0.0.1:5672/" || url === "") {
                setUrl(k === "nats" ? "nats://127.0.0.1:4222" : "amqp://guest:guest@127.0.0.1:5672/");
              }
              setProblems([]);
            }}
          >
            <option value="nats">NATS JetStream (a subject, through a durable consumer)</option>
            <option value="amqp">RabbitMQ (a queue)</option>
          </select>
          {msgs("kind")}
        </div>
      )}
      {text("url", "URL", url, setUrl, initial ? "The password is shown as xxxxx; leave it so to keep the stored one." : undefined)}
      {kind === "nats" ? (
        <>
          {text("subject", "Subject", subject, setSubject, "Wildcards * and > allowed; a JetStream stream must capture it.", "orders.created")}
          <div className="row-fields">
            {text("stream", "Stream (optional)", stream, setStream, "Found from the subject when empty.")}
            {text("durable", "Durable consumer (optional)", durable, setDurable, initial ? undefined : "Default stitchd-<trigger id>, shared by every stitchd process.")}
          </div>
          <div className="row-fields">
            <div className="field">
              <label htmlFor={`${p}-deliver`}>Start with</label>
              <select id={`${p}-deliver`} value={deliver} onChange={(e) => setDeliver(e.target.value)}>
                <option value="all">what the stream holds, then new messages</option>
                <option value="new">new messages only</option>
              </select>
              {msgs("deliver")}
            </div>
            {text("ack_wait_seconds", "Redeliver after (seconds unacknowledged)", ackWait, setAckWait)}
          </div>
        </>
      ) : (
        <div className="row-fields">
          {text("queue", "Queue", queue, setQueue, "An existing queue: stitchd declares nothing.", "orders")}
          {text("prefetch", "Prefetch", prefetch, setPrefetch, "Unacknowledged deliveries per stitchd process.")}
        </div>
      )}
      <div className="field">
        <label htmlFor={`${p}-as`}>Each message</label>
        <select id={`${p}-as`} value={as} onChange={(e) => setAs(e.target.value as "run" | "event")}>
          <option value="run">starts a run (its body is the input)</option>
          <option value="event">is posted as an event (wakes waiting runs, starts event triggers)</option>
        </select>
        {msgs("as")}
      </div>
      {as === "event" && (
        <>
          {text("name", "Event name", name, setName, undefined, "payment.received")}
          <div className="field">
            <label htmlFor={`${p}-keyfrom`}>Event key from</label>
            <select id={`${p}-keyfrom`} value={keyFrom} onChange={(e) => setKeyFrom(e.target.value as "expression" | "header")}>
              <option value="expression">an expression over the body (input)</option>
              <option value="header">a header</option>
            </select>
          </div>
          {keyFrom === "expression"
            ? text("key", "Key expression", key, setKey, "expr-lang over input, the message body.", "input.order_id")
            : text("key_header", "Key header", keyHeader, setKeyHeader, undefined, "Order-Id")}
        </>
      )}
      {as !== "event" && (msgs("name").length > 0 || msgs("key").length > 0) && (
        <>
          {msgs("name")}
          {msgs("key")}
        </>
      )}
      <label className="choice check">
        <input id={`${p}-enabled`} type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} /> Enabled
      </label>
      <FormErrors other={other} error={error} />
      <FormButtons action="save-broker" label={initial ? "Save broker trigger" : "Create broker trigger"} busyLabel="Saving…" busy={busy} onCancel={onCancel} />
    </form>
  );
}
