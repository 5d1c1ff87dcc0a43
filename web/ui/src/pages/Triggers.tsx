// Triggers of one flow: webhooks (POST /hooks/{slug}), schedules (a cron
// in a time zone) and broker triggers (a NATS JetStream subject or a
// RabbitMQ queue). Schedules and broker triggers are created, edited,
// enabled, disabled and deleted here; webhooks created, edited (entity
// mapping, input schema, respond; the slug stays), their secrets rotated
// and deleted. A broker trigger shows whether stitchd is connected and its
// last error.
import { useEffect, useState, type FormEvent } from "react";
import { api, ApiError, can, currentMe, describe, type BrokerTrigger, type Flow, type Problem, type RotatedTriggerSecret, type ScheduleTrigger, type Trigger, type WebhookTrigger, type EventTrigger } from "../api";
import { ago, Countdown, Empty, ErrorBox, Json, Spinner, useLoad } from "../components/common";
import { TaskForm } from "../components/LazyTaskForm";
import { PlainProblem } from "../components/PlainProblem";
import { Link } from "../router";
import { checkJSON } from "./nodesettings/body";
import { knownZone, zones } from "./nodesettings/zones";

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
  const done = (msg: string) => {
    setAdding(null);
    setNotice(msg);
    reload();
  };

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
        <div className="banner ok" role="status">
          {notice}
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

type OtherTrigger = EventTrigger;

function OtherCard({ t, onChanged, onNotice }: { t: OtherTrigger; onChanged: () => void; onNotice: (m: string | null) => void }) {
  const [error, setError] = useState<string | null>(null);
  return (
    <li className={`card trigger other ${t.enabled === false ? "disabled" : ""}`} data-trigger={t.id} data-kind={t.kind}>
      <div className="trigger-head">
        <strong>{t.kind}</strong>
        {t.name && <code>{t.name}</code>}
        {t.enabled !== undefined && <span className={`status ${t.enabled ? "status-enabled" : "status-disabled"}`}>{t.enabled ? "enabled" : "disabled"}</span>}
        <div className="bar-actions">
          <button
            type="button"
            className="btn small danger"
            data-action="delete"
            onClick={async () => {
              if (!confirm(`Delete this ${t.kind} trigger?`)) return;
              try {
                await api("DELETE", `/triggers/${t.id}`);
                onNotice("Trigger deleted.");
                onChanged();
              } catch (err) {
                setError(describe(err));
              }
            }}
          >
            Delete
          </button>
        </div>
      </div>
      {t.created_at && <p className="muted small">Created {ago(t.created_at)}</p>}
      {error && (
        <p className="field-error" role="alert">
          {error}
        </p>
      )}
    </li>
  );
}

function ScheduleCard({ sc, onChanged, onNotice }: { sc: ScheduleTrigger; onChanged: () => void; onNotice: (m: string | null) => void }) {
  const [editing, setEditing] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  async function act(fn: () => Promise<unknown>, msg: string) {
    setBusy(true);
    setError(null);
    try {
      await fn();
      onNotice(msg);
      onChanged();
    } catch (err) {
      setError(describe(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <li className={`card trigger schedule ${sc.enabled ? "" : "disabled"}`} data-trigger={sc.id} data-enabled={String(sc.enabled)}>
      <div className="trigger-head">
        <span className="trigger-kind" aria-hidden="true">
          ◷
        </span>
        <code className="cron" data-cron>
          {sc.cron}
        </code>
        <span className="muted">{sc.timezone}</span>
        <span className={`status ${sc.enabled ? "status-enabled" : "status-disabled"}`} data-state>
          {sc.enabled ? "enabled" : "disabled"}
        </span>
        <div className="bar-actions">
          <button
            type="button"
            className="btn small"
            data-action={sc.enabled ? "disable" : "enable"}
            disabled={busy}
            onClick={() =>
              void act(
                () => api("PATCH", `/triggers/${sc.id}`, { enabled: !sc.enabled }),
                sc.enabled ? "Schedule disabled: it starts no runs until enabled again." : "Schedule enabled: it counts from now.",
              )
            }
          >
            {sc.enabled ? "Disable" : "Enable"}
          </button>
          <button type="button" className="btn small" data-action="edit" disabled={busy} onClick={() => setEditing(!editing)} aria-expanded={editing}>
            Edit
          </button>
          <button
            type="button"
            className="btn small danger"
            data-action="delete"
            disabled={busy}
            onClick={() => {
              if (confirm(`Delete the schedule ${sc.cron}? Runs it started are kept.`)) void act(() => api("DELETE", `/triggers/${sc.id}`), "Schedule deleted.");
            }}
          >
            Delete
          </button>
        </div>
      </div>
      <dl className="kv trigger-kv">
        <dt>Next run</dt>
        <dd data-next>
          {sc.enabled && sc.next_fire_at ? (
            <>
              <Countdown at={sc.next_fire_at} before="in" due="starting now…" className="countdown" />
              <span className="muted small"> · {new Date(sc.next_fire_at).toLocaleString()}</span>
            </>
          ) : (
            <span className="muted">— (disabled)</span>
          )}
        </dd>
        <dt>Last run</dt>
        <dd data-last>
          {sc.last_run_id ? (
            <>
              <Link to={`/runs/${sc.last_run_id}`}>Run {sc.last_run_id.slice(0, 8)}</Link>
              <span className="muted small" title={sc.last_fired_at ?? ""}>
                {" "}
                · {ago(sc.last_fired_at)}
              </span>
            </>
          ) : sc.last_fired_at ? (
            <span title={sc.last_fired_at}>{ago(sc.last_fired_at)}</span>
          ) : (
            <span className="muted">none yet</span>
          )}
        </dd>
        <dt>Overlap</dt>
        <dd>{sc.overlap === "skip" ? "skip a tick while the last run is still going" : "allow runs to overlap"}</dd>
        <dt>Catch up</dt>
        <dd>{sc.catch_up === "one" ? "missed ticks start one run" : "missed ticks start none"}</dd>
      </dl>
      {sc.last_error && (
        <div className="banner warn" role="note" data-last-error>
          ⚠ The last due tick started no run: {sc.last_error}
        </div>
      )}
      <details>
        <summary>Input</summary>
        <Json value={sc.input} label="input" />
      </details>
      {error && (
        <p className="field-error" role="alert">
          {error}
        </p>
      )}
      {editing && (
        <ScheduleForm
          flowId={sc.flow_id}
          initial={sc}
          onDone={() => {
            setEditing(false);
            onNotice("Schedule saved.");
            onChanged();
          }}
          onCancel={() => setEditing(false)}
        />
      )}
    </li>
  );
}

const CRON_EXAMPLES = ["0 9 * * MON-FRI", "*/15 * * * *", "@daily", "0 0 1 * *"];

// ScheduleForm creates a schedule (POST /flows/{id}/triggers) or edits
// one (PATCH /triggers/{id}); the server's messages are shown under their
// fields.
function ScheduleForm({ flowId, initial, onDone, onCancel }: { flowId: string; initial?: ScheduleTrigger; onDone: () => void; onCancel: () => void }) {
  const p = initial ? `sched-${initial.id.slice(0, 8)}` : "sched";
  const [cron, setCron] = useState(initial?.cron ?? "");
  const [timezone, setTimezone] = useState(initial?.timezone ?? (Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC"));
  const [input, setInput] = useState(initial ? JSON.stringify(initial.input ?? {}, null, 2) : "{}");
  const [overlap, setOverlap] = useState<string>(initial?.overlap ?? "skip");
  const [catchUp, setCatchUp] = useState<string>(initial?.catch_up ?? "one");
  const [enabled, setEnabled] = useState(initial?.enabled ?? true);
  const [problems, setProblems] = useState<Problem[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [zoneList] = useState(zones);
  const inputError = input.trim() ? checkJSON(input) : null;
  const inputNotObject = !inputError && input.trim() && !/^\s*\{/.test(input) ? "The input must be a JSON object." : null;
  const zoneError = timezone.trim() && !knownZone(timezone.trim()) ? `${timezone.trim()} is not an IANA time zone this browser knows.` : null;
  const at = (field: string) => problems.filter((x) => x.path === field);
  const other = problems.filter((x) => !["cron", "timezone", "input", "overlap", "catch_up", "enabled"].includes(x.path));
  const msgs = (field: string) =>
    at(field).map((x, i) => (
      <p key={i} className="field-error" role="alert" data-field-error={field}>
        {x.message}
      </p>
    ));

  async function submit(e: FormEvent) {
    e.preventDefault();
    if (inputError || inputNotObject) return;
    setBusy(true);
    setError(null);
    const body: Record<string, unknown> = {
      cron,
      timezone: timezone.trim() || "UTC",
      input: input.trim() ? JSON.parse(input) : {},
      overlap,
      catch_up: catchUp,
      enabled,
    };
    try {
      if (initial) await api("PATCH", `/triggers/${initial.id}`, body);
      else await api("POST", `/flows/${flowId}/triggers`, { kind: "schedule", ...body });
      setProblems([]);
      onDone();
    } catch (err) {
      if (err instanceof ApiError && err.details.length) {
        setProblems(err.details);
        setError(`Not saved: ${err.message}.`);
      } else {
        setProblems([]);
        setError(`Not saved: ${describe(err)}`);
      }
    } finally {
      setBusy(false);
    }
  }

  return (
    <form className="schedule-form" aria-label={initial ? "Edit schedule" : "New schedule"} onSubmit={submit} noValidate>
      <div className="field">
        <label htmlFor={`${p}-cron`}>Cron</label>
        <input
          id={`${p}-cron`}
          className="mono"
          placeholder="0 9 * * MON-FRI"
          spellCheck={false}
          value={cron}
          aria-invalid={at("cron").length > 0}
          aria-describedby={`${p}-cron-help`}
          onChange={(e) => {
            setCron(e.target.value);
            setProblems((ps) => ps.filter((x) => x.path !== "cron"));
          }}
        />
        <p className="hint" id={`${p}-cron-help`}>
          Five fields (minute hour day month weekday), an optional leading seconds field, or @daily, @hourly. E.g.{" "}
          {CRON_EXAMPLES.map((c, i) => (
            <span key={c}>
              {i > 0 && ", "}
              <button type="button" className="linklike mono" onClick={() => setCron(c)}>
                {c}
              </button>
            </span>
          ))}
          .
        </p>
        {msgs("cron")}
      </div>
      <div className="field">
        <label htmlFor={`${p}-timezone`}>Time zone</label>
        <input
          id={`${p}-timezone`}
          list={`${p}-zones`}
          value={timezone}
          aria-invalid={!!zoneError || at("timezone").length > 0}
          onChange={(e) => {
            setTimezone(e.target.value);
            setProblems((ps) => ps.filter((x) => x.path !== "timezone"));
          }}
        />
        <datalist id={`${p}-zones`}>
          {zoneList.map((z) => (
            <option key={z} value={z} />
          ))}
        </datalist>
        <p className="hint">The ticks follow this zone's daylight-saving rules.</p>
        {zoneError && (
          <p className="field-error" role="alert" data-check="local">
            {zoneError}
          </p>
        )}
        {msgs("timezone")}
      </div>
      <div className="field">
        <label htmlFor={`${p}-input`}>Run input (JSON object)</label>
        <textarea
          id={`${p}-input`}
          className="mono"
          rows={3}
          spellCheck={false}
          value={input}
          aria-invalid={!!inputError || !!inputNotObject || at("input").length > 0}
          onChange={(e) => {
            setInput(e.target.value);
            setProblems((ps) => ps.filter((x) => x.path !== "input"));
          }}
        />
        {(inputError || inputNotObject) && (
          <p className="field-error" role="alert" data-check="local">
            {inputError ? `Not valid JSON: ${inputError}` : inputNotObject}
          </p>
        )}
        {msgs("input")}
      </div>
      <div className="row-fields">
        <div className="field">
          <label htmlFor={`${p}-overlap`}>Overlap</label>
          <select id={`${p}-overlap`} value={overlap} onChange={(e) => setOverlap(e.target.value)}>
            <option value="skip">skip a tick while the last run is still going</option>
            <option value="allow">allow runs to overlap</option>
          </select>
          {msgs("overlap")}
        </div>
        <div className="field">
          <label htmlFor={`${p}-catchup`}>After downtime</label>
          <select id={`${p}-catchup`} value={catchUp} onChange={(e) => setCatchUp(e.target.value)}>
            <option value="one">missed ticks start one run</option>
            <option value="none">missed ticks start none</option>
          </select>
          {msgs("catch_up")}
        </div>
      </div>
      <label className="choice check">
        <input id={`${p}-enabled`} type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} /> Enabled
      </label>
      {msgs("enabled")}
      {other.map((x, i) => (
        <p key={i} className="field-error" role="alert">
          {x.path ? <span className="mono">{x.path}: </span> : null}
          {x.message}
        </p>
      ))}
      {error && (
        <p className="field-error" role="alert" data-form-error>
          {error}
        </p>
      )}
      <div className="row-buttons">
        <button type="submit" className="btn primary" data-action="save-schedule" disabled={busy || !!inputError || !!inputNotObject}>
          {busy ? "Saving…" : initial ? "Save schedule" : "Create schedule"}
        </button>
        <button type="button" className="btn" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function WebhookCard({ hook, onChanged, onNotice }: { hook: WebhookTrigger; onChanged: () => void; onNotice: (m: string | null) => void }) {
  const [error, setError] = useState<string | null>(null);
  const [rotating, setRotating] = useState(false);
  // The last rotation's answer: its secret is shown this once (the API
  // never gives it again).
  const [rotated, setRotated] = useState<RotatedTriggerSecret | null>(null);
  const [editing, setEditing] = useState(false);
  const url = `${location.origin}${hook.url}`;
  const required = Array.isArray(hook.input_schema?.required) ? (hook.input_schema!.required as string[]) : [];
  return (
    <li className="card trigger webhook" data-trigger={hook.id}>
      <div className="trigger-head">
        <span className="trigger-kind" aria-hidden="true">
          ⇢
        </span>
        <code data-url>POST {url}</code>
        <span className={`chip ${hook.has_secret ? "chip-ok" : "chip-warn"}`} title={hook.has_secret ? "Requests must be signed with the secret" : "Unsigned: it only creates entities"}>
          {hook.has_secret ? "signed" : "no secret"}
        </span>
        <div className="bar-actions">
          {can(currentMe().me, "edit") && (
            <button type="button" className="btn small" data-action="edit" onClick={() => setEditing(!editing)} aria-expanded={editing}>
              Edit
            </button>
          )}
          {hook.has_secret && (
            <button type="button" className="btn small" data-action="rotate-secret" onClick={() => setRotating(!rotating)} aria-expanded={rotating}>
              Rotate secret
            </button>
          )}
          <button
            type="button"
            className="btn small danger"
            data-action="delete"
            onClick={async () => {
              if (!confirm(`Delete the webhook /hooks/${hook.slug}? Requests to it are refused from now on.`)) return;
              try {
                await api("DELETE", `/triggers/${hook.id}`);
                onNotice("Webhook deleted.");
                onChanged();
              } catch (err) {
                setError(describe(err));
              }
            }}
          >
            Delete
          </button>
        </div>
      </div>
      <p className="muted small">
        Created {ago(hook.created_at)}
        {hook.entity && Object.keys(hook.entity).length > 0
          ? ` · creates or updates a ${hook.entity.type ?? "entity"} from the body${hook.entity.email_path ? ` (email at ${hook.entity.email_path})` : ""}`
          : " · the request's body becomes the run's input"}
        {hook.input_schema && (
          <span data-input-schema>
            {` · bodies must meet its input schema${required.length ? ` (requires ${required.join(", ")})` : ""}`}
          </span>
        )}
        {hook.respond?.mode === "wait" && <span data-respond-wait={hook.respond.timeout_seconds}>{` · waits up to ${hook.respond.timeout_seconds} s for the run to answer`}</span>}
      </p>
      {editing && (
        <WebhookForm
          flowId={hook.flow_id}
          initial={hook}
          onDone={() => {
            setEditing(false);
            onNotice(`Webhook saved: the next request to /hooks/${hook.slug} meets its new settings.`);
            onChanged();
          }}
          onCancel={() => setEditing(false)}
        />
      )}
      {rotating && (
        <RotateSecretForm
          hook={hook}
          onCancel={() => setRotating(false)}
          onDone={(r) => {
            setRotating(false);
            setRotated(r);
            onNotice(null);
          }}
        />
      )}
      {rotated && <NewSecret r={rotated} onDismiss={() => setRotated(null)} />}
      {error && (
        <p className="field-error" role="alert">
          {error}
        </p>
      )}
    </li>
  );
}

// The grace periods offered for a rotation: how long requests signed
// with the old secret are still accepted (the server allows 0 to 7 days).
const GRACES: [number, string][] = [
  [0, "not at all: the old secret stops now"],
  [3600, "1 hour"],
  [86400, "24 hours (the default)"],
  [3 * 86400, "3 days"],
  [7 * 86400, "7 days"],
];

// RotateSecretForm gives a webhook a new, generated secret (POST
// /triggers/{id}/rotate-secret {grace_seconds}) after saying what that
// does.
function RotateSecretForm({ hook, onDone, onCancel }: { hook: WebhookTrigger; onDone: (r: RotatedTriggerSecret) => void; onCancel: () => void }) {
  const [grace, setGrace] = useState(86400);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const id = `rotate-${hook.id.slice(0, 8)}`;
  async function submit(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      onDone(await api<RotatedTriggerSecret>("POST", `/triggers/${hook.id}/rotate-secret`, { grace_seconds: grace }));
    } catch (err) {
      setError(`Not rotated: ${describe(err)}`);
    } finally {
      setBusy(false);
    }
  }
  return (
    <form className="rotate-form" aria-label={`Rotate the secret of /hooks/${hook.slug}`} onSubmit={submit}>
      <p className="small">
        stitchd generates a new secret and shows it once. Senders must sign with it; requests signed with the current secret are still accepted for the
        time chosen below, while you update them.
      </p>
      <div className="field">
        <label htmlFor={`${id}-grace`}>Keep accepting the old secret for</label>
        <select id={`${id}-grace`} value={grace} onChange={(e) => setGrace(Number(e.target.value))}>
          {GRACES.map(([s, label]) => (
            <option key={s} value={s}>
              {label}
            </option>
          ))}
        </select>
      </div>
      {error && (
        <p className="field-error" role="alert" data-rotate-error>
          {error}
        </p>
      )}
      <div className="row-buttons">
        <button type="submit" className="btn primary" data-action="confirm-rotate" disabled={busy}>
          {busy ? "Rotating…" : "Rotate secret"}
        </button>
        <button type="button" className="btn" onClick={onCancel} disabled={busy}>
          Cancel
        </button>
      </div>
    </form>
  );
}

// NewSecret shows a rotation's new secret, this once, and when the old
// one stops being accepted.
function NewSecret({ r, onDismiss }: { r: RotatedTriggerSecret; onDismiss: () => void }) {
  const [copied, setCopied] = useState(false);
  const ends = r.previous_secret_expires_at;
  const endsLater = ends && new Date(ends).getTime() > Date.now();
  return (
    <div className="banner ok new-secret" role="status" data-new-secret>
      <p>
        <strong>New secret</strong> — copy it now: it is not shown again.
      </p>
      <div className="secret-row">
        <code className="secret" data-secret>
          {r.secret}
        </code>
        <button
          type="button"
          className="btn small"
          data-action="copy-secret"
          onClick={() => {
            void navigator.clipboard?.writeText(r.secret).then(
              () => setCopied(true),
              () => setCopied(false),
            );
          }}
        >
          {copied ? "Copied" : "Copy"}
        </button>
      </div>
      <p className="small" data-grace-end={ends ?? ""}>
        {ends && endsLater ? (
          <>
            The old secret is accepted until <strong>{new Date(ends).toLocaleString()}</strong> (
            <Countdown at={ends} before="ends in" due="ended" />
            ).
          </>
        ) : (
          "The old secret is no longer accepted."
        )}
      </p>
      <button type="button" className="btn small ghost" data-action="dismiss-secret" onClick={onDismiss}>
        I have copied it
      </button>
    </div>
  );
}

// WebhookForm creates a webhook (POST /flows/{id}/triggers) or edits one
// (PATCH /triggers/{id}: its slug stays, its secret is rotated apart):
// the entity mapping (board, type, name and email paths), the
// input_schema every request body must meet (JSON, checked as typed, with
// a preview of its form) and whether the hook waits for the run. The
// server's messages are shown under their fields.
function WebhookForm({ flowId, initial, onDone, onCancel }: { flowId: string; initial?: WebhookTrigger; onDone: (slug: string) => void; onCancel: () => void }) {
  const p = initial ? `hook-${initial.id.slice(0, 8)}` : "hook";
  const [slug, setSlug] = useState(initial?.slug ?? "");
  const [secret, setSecret] = useState("");
  const [wait, setWait] = useState(initial?.respond?.mode === "wait");
  const [waitSeconds, setWaitSeconds] = useState(String(initial?.respond?.timeout_seconds ?? 30));
  const ent = initial?.entity && initial.entity.board_id ? initial.entity : null;
  const [makeEntity, setMakeEntity] = useState(!!ent);
  const [boardId, setBoardId] = useState(ent?.board_id ?? "");
  const [entityType, setEntityType] = useState(ent?.type ?? "");
  const [namePath, setNamePath] = useState(ent?.name_path ?? "");
  const [emailPath, setEmailPath] = useState(ent?.email_path ?? "");
  const [schemaText, setSchemaText] = useState(initial?.input_schema ? JSON.stringify(initial.input_schema, null, 2) : "");
  const [preview, setPreview] = useState<any>(undefined);
  const [problems, setProblems] = useState<Problem[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const boards = useLoad(() => api<{ boards: { id: string; name: string; sections: { id: string; name: string }[] }[] }>("GET", "/boards"), []);
  const flow = useLoad(() => api<Flow>("GET", `/flows/${flowId}`), [flowId]);
  const flowBoard = flow.data?.board_id ?? null;
  // A new mapping starts on the flow's board, the one its entities must be on.
  useEffect(() => {
    if (makeEntity && !boardId && flowBoard) setBoardId(flowBoard);
  }, [makeEntity, boardId, flowBoard]);

  let schema: Record<string, any> | null = null;
  let schemaError: string | null = null;
  if (schemaText.trim()) {
    try {
      const v = JSON.parse(schemaText);
      if (v === null || typeof v !== "object" || Array.isArray(v)) schemaError = 'An input schema is a JSON object (a JSON Schema), e.g. {"type": "object", "required": ["amount"]}.';
      else schema = v;
    } catch (err) {
      schemaError = `Not valid JSON: ${(err as Error).message}`;
    }
  }
  const isSchemaPath = (path?: string) => path === "input_schema" || !!path?.startsWith("input_schema.");
  const schemaProblems = problems.filter((x) => isSchemaPath(x.path));
  const other = problems.filter((x) => !schemaProblems.includes(x));
  const entityMissing = makeEntity && (!boardId || !entityType.trim()) ? "Choose a board and name the entity type." : null;
  const board = boards.data?.boards.find((b) => b.id === boardId);

  async function submit(e: FormEvent) {
    e.preventDefault();
    if (schemaError || entityMissing) return;
    setBusy(true);
    setError(null);
    const entity = makeEntity
      ? { board_id: boardId, type: entityType.trim(), ...(namePath.trim() ? { name_path: namePath.trim() } : {}), ...(emailPath.trim() ? { email_path: emailPath.trim() } : {}) }
      : null;
    const respond = wait ? { mode: "wait", timeout_seconds: Number(waitSeconds) } : null;
    try {
      if (initial) {
        await api("PATCH", `/triggers/${initial.id}`, { entity, input_schema: schema, respond });
      } else {
        const body: Record<string, unknown> = { slug: slug.trim() };
        if (secret) body.secret = secret;
        if (respond) body.respond = respond;
        if (entity) body.entity = entity;
        if (schema) body.input_schema = schema;
        await api("POST", `/flows/${flowId}/triggers`, body);
      }
      setProblems([]);
      onDone(slug.trim());
    } catch (err) {
      if (err instanceof ApiError && err.details.length) {
        setProblems(err.details);
        setError(`Not saved: ${err.message}.`);
      } else {
        setProblems([]);
        setError(`Not saved: ${describe(err)}`);
      }
    } finally {
      setBusy(false);
    }
  }
  return (
    <form className="webhook-form" aria-label={initial ? `Edit webhook ${initial.slug}` : "New webhook"} onSubmit={submit} noValidate>
      {initial ? (
        <p className="hint">
          <code>POST /hooks/{initial.slug}</code> keeps its address; its secret is changed with <em>Rotate secret</em>.
        </p>
      ) : (
        <>
          <div className="field">
            <label htmlFor={`${p}-slug`}>Slug</label>
            <input id={`${p}-slug`} className="mono" placeholder="new-lead" value={slug} onChange={(e) => setSlug(e.target.value)} />
            <p className="hint">
              Requests to <code>POST /hooks/{slug.trim() || "…"}</code> start a run with their body as input.
            </p>
          </div>
          <div className="field">
            <label htmlFor={`${p}-secret`}>Secret (optional)</label>
            <input id={`${p}-secret`} type="password" autoComplete="new-password" value={secret} onChange={(e) => setSecret(e.target.value)} />
            <p className="hint">With a secret, requests must be signed; without one, the hook only creates entities.</p>
          </div>
        </>
      )}
      <fieldset className="hook-entity" data-field="entity">
        <legend>Entity</legend>
        <label className="choice">
          <input id={`${p}-entity`} type="checkbox" checked={makeEntity} onChange={(e) => setMakeEntity(e.target.checked)} /> Create or update an entity from each
          request
        </label>
        {makeEntity && (
          <>
            <div className="row-fields">
              <div className="field">
                <label htmlFor={`${p}-board`}>Board</label>
                <select id={`${p}-board`} value={boardId} onChange={(e) => setBoardId(e.target.value)}>
                  <option value="">— choose a board —</option>
                  {(boards.data?.boards ?? []).map((b) => (
                    <option key={b.id} value={b.id}>
                      {b.name}
                      {b.id === flowBoard ? " (the flow's board)" : ""}
                    </option>
                  ))}
                </select>
                {board && board.sections.length > 0 && (
                  <p className="hint">
                    Sections: {board.sections.map((x) => x.name).join(" → ")}. The flow's steps move the entity between them.
                  </p>
                )}
              </div>
              <div className="field">
                <label htmlFor={`${p}-entity-type`}>Entity type</label>
                <input id={`${p}-entity-type`} placeholder="lead" value={entityType} onChange={(e) => setEntityType(e.target.value)} />
              </div>
            </div>
            <div className="row-fields">
              <div className="field">
                <label htmlFor={`${p}-name-path`}>Name from (path in the body)</label>
                <input id={`${p}-name-path`} className="mono" placeholder="customer.name" value={namePath} onChange={(e) => setNamePath(e.target.value)} />
              </div>
              <div className="field">
                <label htmlFor={`${p}-email-path`}>Email from (path in the body)</label>
                <input id={`${p}-email-path`} className="mono" placeholder="customer.email" value={emailPath} onChange={(e) => setEmailPath(e.target.value)} />
              </div>
            </div>
            <p className="hint">Paths are gjson paths into the request body. A request naming a known email updates that entity (only with a secret).</p>
            {entityMissing && (
              <p className="field-error" role="alert" data-check="local">
                {entityMissing}
              </p>
            )}
          </>
        )}
      </fieldset>
      <div className="field" data-field="input_schema">
        <label htmlFor={`${p}-schema`}>Input schema (JSON Schema, optional)</label>
        <textarea
          id={`${p}-schema`}
          className="mono"
          rows={6}
          spellCheck={false}
          placeholder='{"type": "object", "required": ["amount"], "properties": {"amount": {"type": "number"}}}'
          value={schemaText}
          aria-invalid={!!schemaError || schemaProblems.length > 0}
          onChange={(e) => {
            setSchemaText(e.target.value);
            setProblems((ps) => ps.filter((x) => !isSchemaPath(x.path)));
          }}
        />
        <p className="hint">Every request body must meet it: one that does not is refused (400, each problem listed) and starts no run. Empty: any JSON body.</p>
        {schemaError && (
          <p className="field-error" role="alert" data-check="local" data-schema-error>
            {schemaError}
          </p>
        )}
        {schemaProblems.map((x, i) => (
          <p key={i} className="field-error" role="alert" data-field-error="input_schema">
            <PlainProblem message={x.message} path={x.path} />
          </p>
        ))}
        {schema && !schemaError && (
          <details className="form-preview">
            <summary>Preview</summary>
            <TaskForm id={`${p}-preview`} schema={schema} value={preview} onChange={setPreview} serverProblems={[]} />
          </details>
        )}
      </div>
      <div className="field">
        <label className="choice">
          <input id={`${p}-wait`} type="checkbox" checked={wait} onChange={(e) => setWait(e.target.checked)} /> Wait for the run before answering
        </label>
        {wait && (
          <div className="row">
            <label htmlFor={`${p}-wait-seconds`}>for at most</label>
            <input id={`${p}-wait-seconds`} type="number" min={1} max={60} value={waitSeconds} onChange={(e) => setWaitSeconds(e.target.value)} /> seconds
          </div>
        )}
        <p className="hint">
          {wait
            ? "The request is answered with the run's output (or error) when it ends in time, with a Respond step's answer as soon as one fires, else 202 “running”."
            : "The request is answered 202 with the run's id as soon as the run started."}
        </p>
      </div>
      {other.map((x, i) => (
        <p key={i} className="field-error" role="alert">
          {x.path ? <span className="mono">{x.path}: </span> : null}
          {x.message}
        </p>
      ))}
      {error && (
        <p className="field-error" role="alert" data-form-error>
          {error}
        </p>
      )}
      <div className="row-buttons">
        <button type="submit" className="btn primary" data-action="save-webhook" disabled={busy || (!initial && !slug.trim()) || !!schemaError || !!entityMissing}>
          {busy ? (initial ? "Saving…" : "Creating…") : initial ? "Save webhook" : "Create webhook"}
        </button>
        <button type="button" className="btn" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function BrokerCard({ t, onChanged, onNotice }: { t: BrokerTrigger; onChanged: () => void; onNotice: (m: string | null) => void }) {
  const [editing, setEditing] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const source = t.kind === "nats" ? t.subject : t.queue;

  async function act(fn: () => Promise<unknown>, msg: string) {
    setBusy(true);
    setError(null);
    try {
      await fn();
      onNotice(msg);
      onChanged();
    } catch (err) {
      setError(describe(err));
    } finally {
      setBusy(false);
    }
  }

  const state = !t.enabled ? "disabled" : t.connected ? "connected" : "not connected";
  return (
    <li className={`card trigger broker ${t.enabled ? "" : "disabled"}`} data-trigger={t.id} data-kind={t.kind} data-connected={String(t.connected)}>
      <div className="trigger-head">
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
        <div className="bar-actions">
          <button
            type="button"
            className="btn small"
            data-action={t.enabled ? "disable" : "enable"}
            disabled={busy}
            onClick={() =>
              void act(
                () => api("PATCH", `/triggers/${t.id}`, { enabled: !t.enabled }),
                t.enabled ? "Broker trigger disabled: its messages wait in the broker." : "Broker trigger enabled.",
              )
            }
          >
            {t.enabled ? "Disable" : "Enable"}
          </button>
          <button type="button" className="btn small" data-action="edit" disabled={busy} onClick={() => setEditing(!editing)} aria-expanded={editing}>
            Edit
          </button>
          <button
            type="button"
            className="btn small danger"
            data-action="delete"
            disabled={busy}
            onClick={() => {
              if (confirm(`Delete this ${t.kind} trigger? Runs it started are kept; new messages wait in the broker.`))
                void act(() => api("DELETE", `/triggers/${t.id}`), "Broker trigger deleted.");
            }}
          >
            Delete
          </button>
        </div>
      </div>
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
      {error && (
        <p className="field-error" role="alert">
          {error}
        </p>
      )}
      {editing && (
        <BrokerForm
          flowId={t.flow_id}
          initial={t}
          onDone={() => {
            setEditing(false);
            onNotice("Broker trigger saved: its consumers restart with the new settings.");
            onChanged();
          }}
          onCancel={() => setEditing(false)}
        />
      )}
    </li>
  );
}

const BROKER_FIELDS = ["kind", "url", "subject", "stream", "durable", "deliver", "ack_wait_seconds", "queue", "prefetch", "as", "name", "key", "key_header", "ttl_seconds", "enabled"];

// BrokerForm creates a broker trigger (POST /flows/{id}/triggers) or edits
// one (PATCH /triggers/{id}); the server's 422 messages are shown under
// their fields.
function BrokerForm({ flowId, initial, onDone, onCancel }: { flowId: string; initial?: BrokerTrigger; onDone: () => void; onCancel: () => void }) {
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
  const [problems, setProblems] = useState<Problem[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const at = (field: string) => problems.filter((x) => x.path === field);
  const other = problems.filter((x) => !BROKER_FIELDS.includes(x.path));
  const msgs = (field: string) =>
    at(field).map((x, i) => (
      <p key={i} className="field-error" role="alert" data-field-error={field}>
        {x.message}
      </p>
    ));
  const clear = (field: string) => setProblems((ps) => ps.filter((x) => x.path !== field));
  const whole = (v: string) => (/^\d+$/.test(v.trim()) ? Number(v.trim()) : v.trim() === "" ? 0 : NaN);

  async function submit(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setError(null);
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
        setProblems([{ code: "local", path: k, message: "a whole number" } as Problem]);
        setBusy(false);
        return;
      }
    }
    try {
      if (initial) await api("PATCH", `/triggers/${initial.id}`, body);
      else await api("POST", `/flows/${flowId}/triggers`, { kind, ...body });
      setProblems([]);
      onDone();
    } catch (err) {
      if (err instanceof ApiError && err.details.length) {
        setProblems(err.details);
        setError(`Not saved: ${err.message}.`);
      } else {
        setProblems([]);
        setError(`Not saved: ${describe(err)}`);
      }
    } finally {
      setBusy(false);
    }
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
      {other.map((x, i) => (
        <p key={i} className="field-error" role="alert">
          {x.path ? <span className="mono">{x.path}: </span> : null}
          {x.message}
        </p>
      ))}
      {error && (
        <p className="field-error" role="alert" data-form-error>
          {error}
        </p>
      )}
      <div className="row-buttons">
        <button type="submit" className="btn primary" data-action="save-broker" disabled={busy}>
          {busy ? "Saving…" : initial ? "Save broker trigger" : "Create broker trigger"}
        </button>
        <button type="button" className="btn" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

// TriggerCard is one trigger's card with its forms, as on this page; the
// editor shows it in its side panel when the trigger's start node is
// clicked.
export function TriggerCard({ t, onChanged, onNotice }: { t: Trigger; onChanged: () => void; onNotice: (m: string | null) => void }) {
  return (
    <ul className="trigger-list" aria-label="Trigger">
      {t.kind === "schedule" ? (
        <ScheduleCard sc={t} onChanged={onChanged} onNotice={onNotice} />
      ) : t.kind === "webhook" ? (
        <WebhookCard hook={t} onChanged={onChanged} onNotice={onNotice} />
      ) : t.kind === "event" ? (
        <OtherCard t={t} onChanged={onChanged} onNotice={onNotice} />
      ) : (
        <BrokerCard t={t} onChanged={onChanged} onNotice={onNotice} />
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
