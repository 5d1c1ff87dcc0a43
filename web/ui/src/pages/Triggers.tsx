// Triggers of one flow: webhooks (POST /hooks/{slug}) and schedules
// (a cron in a time zone). Schedules are created, edited, enabled,
// disabled and deleted here; webhooks created and deleted.
import { useEffect, useState, type FormEvent } from "react";
import { api, ApiError, describe, type Flow, type Problem, type ScheduleTrigger, type Trigger, type WebhookTrigger } from "../api";
import { ago, Countdown, Empty, ErrorBox, Json, Spinner, useLoad } from "../components/common";
import { Link } from "../router";
import { checkJSON } from "./IntegrationSettings";
import { knownZone, zones } from "./NodeSettings";

export function Triggers({ flowId }: { flowId: string }) {
  const flow = useLoad(() => api<Flow>("GET", `/flows/${flowId}`), [flowId]);
  const { data, error, loading, reload } = useLoad(() => api<{ triggers: Trigger[] }>("GET", `/flows/${flowId}/triggers`), [flowId]);
  const [adding, setAdding] = useState<"schedule" | "webhook" | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  // Read again now and then: a schedule fires, its next time moves on.
  useEffect(() => {
    const t = window.setInterval(reload, 15000);
    return () => window.clearInterval(t);
  }, [reload]);
  const triggers = data?.triggers ?? [];
  const schedules = triggers.filter((t): t is ScheduleTrigger => t.kind === "schedule");
  const hooks = triggers.filter((t): t is WebhookTrigger => t.kind === "webhook");
  // Kinds this page does not know in detail yet (e.g. event triggers) are
  // listed all the same, so none is hidden.
  const others = triggers.filter((t) => t.kind !== "schedule" && t.kind !== "webhook") as unknown as OtherTrigger[];
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
          <button type="button" className="btn primary" data-action="new-schedule" onClick={() => setAdding("schedule")} disabled={adding === "schedule"}>
            New schedule
          </button>
          <button type="button" className="btn" data-action="new-webhook" onClick={() => setAdding("webhook")} disabled={adding === "webhook"}>
            New webhook
          </button>
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
      {loading && <Spinner label="Loading triggers…" />}
      {data && triggers.length === 0 && !adding && (
        <Empty title="No triggers yet">
          <p>A schedule starts a run at each tick of a cron; a webhook starts one for each request to its URL.</p>
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

interface OtherTrigger {
  id: string;
  kind: string;
  name?: string;
  enabled?: boolean;
  created_at?: string;
}

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
  const url = `${location.origin}${hook.url}`;
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
      </p>
      {error && (
        <p className="field-error" role="alert">
          {error}
        </p>
      )}
    </li>
  );
}

function WebhookForm({ flowId, onDone, onCancel }: { flowId: string; onDone: (slug: string) => void; onCancel: () => void }) {
  const [slug, setSlug] = useState("");
  const [secret, setSecret] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  async function submit(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const body: Record<string, unknown> = { slug: slug.trim() };
      if (secret) body.secret = secret;
      await api("POST", `/flows/${flowId}/triggers`, body);
      onDone(slug.trim());
    } catch (err) {
      setError(err instanceof ApiError && err.details.length ? err.details.map((d) => d.message).join("; ") : describe(err));
    } finally {
      setBusy(false);
    }
  }
  return (
    <form className="webhook-form" aria-label="New webhook" onSubmit={submit}>
      <div className="field">
        <label htmlFor="hook-slug">Slug</label>
        <input id="hook-slug" className="mono" placeholder="new-lead" value={slug} onChange={(e) => setSlug(e.target.value)} />
        <p className="hint">
          Requests to <code>POST /hooks/{slug.trim() || "…"}</code> start a run with their body as input.
        </p>
      </div>
      <div className="field">
        <label htmlFor="hook-secret">Secret (optional)</label>
        <input id="hook-secret" type="password" autoComplete="new-password" value={secret} onChange={(e) => setSecret(e.target.value)} />
        <p className="hint">With a secret, requests must be signed; without one, the hook only creates entities.</p>
      </div>
      {error && (
        <p className="field-error" role="alert">
          {error}
        </p>
      )}
      <div className="row-buttons">
        <button type="submit" className="btn primary" disabled={busy || !slug.trim()}>
          {busy ? "Creating…" : "Create webhook"}
        </button>
        <button type="button" className="btn" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
