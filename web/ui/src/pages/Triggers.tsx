// Triggers of one flow: webhooks (POST /hooks/{slug}), schedules (a cron
// in a time zone) and broker triggers (a NATS JetStream subject or a
// RabbitMQ queue). Schedules and broker triggers are created, edited,
// enabled, disabled and deleted here; webhooks created, edited (entity
// mapping, input schema, respond; the slug stays), their secrets rotated
// and deleted. A broker trigger shows whether stitchd is connected and its
// last error.
import { useEffect, useState } from "react";
import { api, can, currentMe, type BrokerTrigger, type Flow, type ScheduleTrigger, type Trigger, type WebhookTrigger } from "../api";
import { Empty, ErrorBox, isNotFound, NotFound, Spinner, useLoad } from "../components/common";
import { Link } from "../router";
import { BrokerCard, BrokerForm } from "./triggers/BrokerTrigger";
import { OtherCard, type OtherTrigger } from "./triggers/OtherTrigger";
import { ScheduleCard, ScheduleForm } from "./triggers/ScheduleTrigger";
import type { TriggerCardProps } from "./triggers/TriggerCard";
import { WebhookCard, WebhookForm } from "./triggers/WebhookTrigger";

// NOTICE_MS is how long a success message stays.
const NOTICE_MS = 6000;

export function Triggers({ flowId }: { flowId: string }) {
  const flow = useLoad(() => api<Flow>("GET", `/flows/${flowId}`), [flowId]);
  const { data, error, loading, reload } = useLoad(() => api<{ triggers: Trigger[] }>("GET", `/flows/${flowId}/triggers`), [flowId]);
  const [adding, setAdding] = useState<"schedule" | "webhook" | "broker" | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const triggers = data?.triggers ?? [];
  const brokers = triggers.filter((t): t is BrokerTrigger => t.kind === "nats" || t.kind === "amqp");
  // Read again now and then: a schedule fires, its next time moves on; a
  // broker trigger connects or loses its connection (more often then).
  const every = brokers.length > 0 ? 3000 : 15000;
  useEffect(() => {
    const t = window.setInterval(reload, every);
    return () => window.clearInterval(t);
  }, [reload, every]);
  const schedules = triggers.filter((t): t is ScheduleTrigger => t.kind === "schedule");
  const hooks = triggers.filter((t): t is WebhookTrigger => t.kind === "webhook");
  // Kinds this page does not show in detail (event triggers) are listed
  // all the same, so none is hidden.
  const others = triggers.filter((t): t is OtherTrigger => !["schedule", "webhook", "nats", "amqp"].includes(t.kind));
  // A success message says what just happened: it goes after a few
  // seconds (or when dismissed), not stays over the page for good.
  useEffect(() => {
    if (!notice) return;
    const t = window.setTimeout(() => setNotice(null), NOTICE_MS);
    return () => window.clearTimeout(t);
  }, [notice]);
  const done = (msg: string) => {
    setAdding(null);
    setNotice(msg);
    reload();
  };

  if (!flow.data && isNotFound(flow.error)) return <NotFound what="flow" id={flowId} back="/flows" backLabel="All flows" />;
  return (
    <section className="page triggers-page" aria-label="Triggers">
      <div className="page-head">
        <h1>
          Triggers{" "}
          {flow.data && (
            <span className="muted">
              · <Link to={`/flows/${flowId}`}>{flow.data.name}</Link>
            </span>
          )}
        </h1>
        <div className="bar-actions">
          <Link className="btn ghost" to={`/flows/${flowId}`}>
            Editor
          </Link>
          <Link className="btn ghost" to={`/runs?flow_id=${flowId}`}>
            Runs
          </Link>
          {can(currentMe().me, "edit") && (
            <>
              <button type="button" className="btn primary" data-action="new-schedule" onClick={() => setAdding("schedule")} disabled={adding === "schedule"}>
                New schedule
              </button>
              <button type="button" className="btn" data-action="new-webhook" onClick={() => setAdding("webhook")} disabled={adding === "webhook"}>
                New webhook
              </button>
              <button type="button" className="btn" data-action="new-broker" onClick={() => setAdding("broker")} disabled={adding === "broker"}>
                New broker trigger
              </button>
            </>
          )}
        </div>
      </div>
      <ErrorBox error={flow.error ?? error} onRetry={reload} />
      {notice && (
        <div className="banner ok dismissible" role="status" data-notice>
          <span>{notice}</span>
          <button type="button" className="linklike" aria-label="Dismiss" title="Dismiss" onClick={() => setNotice(null)}>
            ×
          </button>
        </div>
      )}
      {adding === "schedule" && (
        <div className="card trigger-new">
          <h2>New schedule</h2>
          <ScheduleForm flowId={flowId} onDone={() => done("Schedule created.")} onCancel={() => setAdding(null)} />
        </div>
      )}
      {adding === "webhook" && (
        <div className="card trigger-new">
          <h2>New webhook</h2>
          <WebhookForm flowId={flowId} onDone={(slug) => done(`Webhook created: POST /hooks/${slug} starts a run.`)} onCancel={() => setAdding(null)} />
        </div>
      )}
      {adding === "broker" && (
        <div className="card trigger-new">
          <h2>New broker trigger</h2>
          <BrokerForm flowId={flowId} onDone={() => done("Broker trigger created: stitchd connects within a second.")} onCancel={() => setAdding(null)} />
        </div>
      )}
      {loading && <Spinner label="Loading triggers…" />}
      {data && triggers.length === 0 && !adding && (
        <Empty title="No triggers yet">
          <p>
            A schedule starts a run at each tick of a cron; a webhook starts one for each request to its URL; a broker trigger starts one for each message of a NATS
            subject or RabbitMQ queue.
          </p>
        </Empty>
      )}
      {schedules.length > 0 && (
        <>
          <h2 className="section-title">Schedules</h2>
          <ul className="trigger-list" aria-label="Schedules">
            {schedules.map((sc) => (
              <ScheduleCard key={sc.id} sc={sc} onChanged={reload} onNotice={setNotice} />
            ))}
          </ul>
        </>
      )}
      {hooks.length > 0 && (
        <>
          <h2 className="section-title">Webhooks</h2>
          <ul className="trigger-list" aria-label="Webhooks">
            {hooks.map((h) => (
              <WebhookCard key={h.id} hook={h} onChanged={reload} onNotice={setNotice} />
            ))}
          </ul>
        </>
      )}
      {brokers.length > 0 && (
        <>
          <h2 className="section-title">Broker triggers</h2>
          <ul className="trigger-list" aria-label="Broker triggers">
            {brokers.map((b) => (
              <BrokerCard key={b.id} t={b} onChanged={reload} onNotice={setNotice} />
            ))}
          </ul>
        </>
      )}
      {others.length > 0 && (
        <>
          <h2 className="section-title">Other triggers</h2>
          <ul className="trigger-list" aria-label="Other triggers">
            {others.map((o) => (
              <OtherCard key={o.id} t={o} onChanged={reload} onNotice={setNotice} />
            ))}
          </ul>
        </>
      )}
    </section>
  );
}

// TriggerPanel is one trigger's card with its forms, as on this page; the
// editor shows it in its side panel when the trigger's start node is
// clicked.
export function TriggerPanel({ t, ...props }: { t: Trigger } & TriggerCardProps) {
  return (
    <ul className="trigger-list" aria-label="Trigger">
      {t.kind === "schedule" ? (
        <ScheduleCard sc={t} {...props} />
      ) : t.kind === "webhook" ? (
        <WebhookCard hook={t} {...props} />
      ) : t.kind === "event" ? (
        <OtherCard t={t} {...props} />
      ) : (
        <BrokerCard t={t} {...props} />
      )}
    </ul>
  );
}

// triggerTitle names a trigger in a line: its kind and what starts it.
export function triggerTitle(t: Trigger): { kind: string; what: string } {
  const k = (t as { kind: string }).kind;
  if (k === "webhook") return { kind: "Webhook", what: `POST /hooks/${(t as WebhookTrigger).slug}` };
  if (k === "schedule") return { kind: "Schedule", what: (t as ScheduleTrigger).cron };
  if (k === "nats" || k === "amqp") {
    const b = t as BrokerTrigger;
    return { kind: k === "nats" ? "NATS" : "RabbitMQ", what: b.subject ?? b.queue ?? "" };
  }
  return { kind: k.charAt(0).toUpperCase() + k.slice(1), what: "" };
}
