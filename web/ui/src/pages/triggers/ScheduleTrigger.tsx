// A schedule: a cron in a time zone starts a run at each tick.
import { useState, type FormEvent } from "react";
import { api, type ScheduleTrigger } from "../../api";
import { ago, Countdown, FormErrors, Json } from "../../components/common";
import { Link } from "../../router";
import { checkJSON } from "../nodesettings/body";
import { knownZone, zones } from "../nodesettings/zones";
import { EditButton, ToggleButton, TriggerCard, useTriggerAct, useTriggerEdit, type TriggerCardProps } from "./TriggerCard";
import { FormButtons, useTriggerForm } from "./TriggerForm";

export function ScheduleCard({ sc, ...props }: { sc: ScheduleTrigger } & TriggerCardProps) {
  const { editing, setEditing, saved } = useTriggerEdit(props);
  const act = useTriggerAct(props);
  return (
    <TriggerCard
      id={sc.id}
      kind="schedule"
      disabled={!sc.enabled}
      attrs={{ "data-enabled": String(sc.enabled) }}
      act={act}
      remove={{ question: `Delete the schedule ${sc.cron}? Runs it started are kept.`, notice: "Schedule deleted.", lock: true }}
      head={
        <>
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
        </>
      }
      actions={
        <>
          <ToggleButton id={sc.id} enabled={sc.enabled} act={act} said={{ on: "Schedule enabled: it counts from now.", off: "Schedule disabled: it starts no runs until enabled again." }} />
          <EditButton editing={editing} setEditing={setEditing} busy={act.busy} />
        </>
      }
      after={
        editing && (
          <ScheduleForm
            flowId={sc.flow_id}
            initial={sc}
            onDone={() => saved("Schedule saved.")}
            onCancel={() => setEditing(false)}
          />
        )
      }
    >
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
    </TriggerCard>
  );
}

const CRON_EXAMPLES = ["0 9 * * MON-FRI", "*/15 * * * *", "@daily", "0 0 1 * *"];

// ScheduleForm creates a schedule (POST /flows/{id}/triggers) or edits
// one (PATCH /triggers/{id}); the server's messages are shown under their
// fields.
export function ScheduleForm({ flowId, initial, onDone, onCancel }: { flowId: string; initial?: ScheduleTrigger; onDone: () => void; onCancel: () => void }) {
  const p = initial ? `sched-${initial.id.slice(0, 8)}` : "sched";
  const [cron, setCron] = useState(initial?.cron ?? "");
  const [timezone, setTimezone] = useState(initial?.timezone ?? (Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC"));
  const [input, setInput] = useState(initial ? JSON.stringify(initial.input ?? {}, null, 2) : "{}");
  const [overlap, setOverlap] = useState<string>(initial?.overlap ?? "skip");
  const [catchUp, setCatchUp] = useState<string>(initial?.catch_up ?? "one");
  const [enabled, setEnabled] = useState(initial?.enabled ?? true);
  const { problems, busy, error, save, at, msgs, clear } = useTriggerForm();
  const [zoneList] = useState(zones);
  const inputError = input.trim() ? checkJSON(input) : null;
  const inputNotObject = !inputError && input.trim() && !/^\s*\{/.test(input) ? "The input must be a JSON object." : null;
  const zoneError = timezone.trim() && !knownZone(timezone.trim()) ? `${timezone.trim()} is not an IANA time zone this browser knows.` : null;
  const other = problems.filter((x) => !["cron", "timezone", "input", "overlap", "catch_up", "enabled"].includes(x.path));

  async function submit(e: FormEvent) {
    e.preventDefault();
    if (inputError || inputNotObject) return;
    const body: Record<string, unknown> = {
      cron,
      timezone: timezone.trim() || "UTC",
      input: input.trim() ? JSON.parse(input) : {},
      overlap,
      catch_up: catchUp,
      enabled,
    };
    await save(() => (initial ? api("PATCH", `/triggers/${initial.id}`, body) : api("POST", `/flows/${flowId}/triggers`, { kind: "schedule", ...body })), onDone);
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
            clear("cron");
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
            clear("timezone");
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
            clear("input");
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
      <FormErrors other={other} error={error} />
      <FormButtons
        action="save-schedule"
        label={initial ? "Save schedule" : "Create schedule"}
        busyLabel="Saving…"
        busy={busy}
        disabled={!!inputError || !!inputNotObject}
        onCancel={onCancel}
      />
    </form>
  );
}
