// A run's events as the run view lists them: the run's summary with its
// latest events, and one event in a line.
import type { Run, StreamEvent } from "../../api";
import { ago, Json, Status } from "../../components/common";
import { taskEventText } from "../../components/taskwords";
import { truncate } from "../../graph";

export function RunSummary({ run, events }: { run: Run; events: StreamEvent[]; eventCount: number }) {
  const recent = events.slice(-100);
  return (
    <div className="settings">
      <h2>Run</h2>
      <dl className="kv">
        <dt>Status</dt>
        <dd>
          <Status status={run.status} />
        </dd>
        <dt>Started</dt>
        <dd title={run.created_at}>
          {ago(run.created_at)}
          {run.started_by ? (
            <>
              {" by "}
              <span data-started-by>{run.started_by}</span>
            </>
          ) : null}
        </dd>
        <dt>Finished</dt>
        <dd title={run.finished_at ?? ""}>{run.finished_at && run.status !== "paused" ? ago(run.finished_at) : "—"}</dd>
      </dl>
      <p className="muted small">Click a node to see its input, output, attempts and events.</p>
      <h3>Input</h3>
      <Json value={run.input} label="input" />
      <h3>Output</h3>
      <Json value={run.output} label="output yet" />
      <h3>Timeline</h3>
      {recent.length === 0 ? (
        <p className="muted">No events yet.</p>
      ) : (
        <ol className="events timeline" aria-label="Run events" start={events.length - recent.length + 1}>
          {recent.map((e) => (
            <EventItem key={e.id} e={e} withKey />
          ))}
        </ol>
      )}
    </div>
  );
}

export function EventItem({ e, withKey }: { e: StreamEvent; withKey?: boolean }) {
  return (
    <li className={EVENT_CLASS[e.type]} data-event={e.type}>
      <span className="muted" title={e.created_at}>
        {new Date(e.created_at).toLocaleTimeString()}
      </span>{" "}
      {withKey && e.key ? <span className="mono">{e.key} </span> : null}
      <strong>{EVENT_LABEL[e.type] ?? e.type}</strong> {eventSummary(e)}
    </li>
  );
}

// Readable names of the events a person caused or that change the run's
// course; the others show their type.
const EVENT_LABEL: Record<string, string> = {
  "loop.iteration": "↺ loop",
  "node.completed_by_hand": "completed by hand",
  "node.reminder": "reminder sent",
  "node.rerun": "re-run",
  "run.paused": "run paused",
  "run.unpaused": "run resumed",
  "run.queued": "run queued",
  "run.migrated": "run migrated",
  "node.child_started": "↳ child run started",
  "node.child_finished": "↳ child run finished",
  "node.log": "✎ log",
};
const EVENT_CLASS: Record<string, string> = {
  "loop.iteration": "event-loop",
  "node.completed_by_hand": "event-hand",
  "run.paused": "event-control",
  "run.unpaused": "event-control",
  "run.queued": "event-control",
  "run.migrated": "event-control",
};

// TASK_EVENTS are a task's own events, worded as the task page words them.
export const TASK_EVENTS = new Set(["node.claimed", "node.unclaimed", "node.reassigned", "node.delegated", "node.escalated", "approval.vote", "approval.decided_for"]);

export function eventSummary(e: StreamEvent): string {
  const p = e.payload ?? {};
  // A task's events in business language ("ann@example.com claimed it").
  if (TASK_EVENTS.has(e.type)) {
    const t = taskEventText(e);
    if (t) return t;
  }
  if (e.type === "loop.iteration") {
    const n = Number(p.iteration ?? 0);
    return `${e.key ?? "the loop's source"} went back to ${p.head ?? "the loop's head"} (edge ${p.loop ?? "?"}): iteration ${n + 1} begins`;
  }
  if (e.type === "node.completed_by_hand") return `by ${who(p.by) || "someone"}, when it was ${String(p.from ?? "?").replace(/_/g, " ")}`;
  if (e.type === "node.rerun") {
    const n = Number(p.reset ?? 0);
    return `by ${who(p.by) || "someone"} · attempt ${p.attempt ?? "?"}${n ? ` · ${n} ${n === 1 ? "step" : "steps"} reset` : ""}`;
  }
  if (e.type === "run.paused") {
    const n = Number(p.held_dispatches ?? 0);
    return `nothing new starts until it is resumed${n ? ` · ${n} ${n === 1 ? "dispatch" : "dispatches"} held` : ""}`;
  }
  if (e.type === "node.log") return `${e.key ?? ""}: ${String(p.message ?? "")}${p.data !== undefined ? ` · ${truncate(JSON.stringify(p.data), 160)}` : ""}`;
  if (e.type === "run.queued") return `waits behind run ${typeof p.behind === "string" ? p.behind : "?"} of its entity`;
  if (e.type === "run.unpaused") {
    const n = Number(p.released_dispatches ?? 0);
    return `what became ready starts now${n ? ` · ${n} held ${n === 1 ? "dispatch" : "dispatches"} sent` : ""}`;
  }
  if (e.type === "run.migrated") {
    const added = Number(p.added ?? 0);
    const dropped = Number(p.dropped ?? 0);
    return `to version ${p.version ?? "?"}${who(p.by) ? ` by ${who(p.by)}` : ""}${added ? ` · ${added} ${added === 1 ? "step" : "steps"} added` : ""}${dropped ? ` · ${dropped} dropped` : ""}`;
  }
  const parts: string[] = [];
  if (p.status) parts.push(p.status);
  if (p.attempt) parts.push(`attempt ${p.attempt}`);
  if (p.try) parts.push(`try ${p.try}`);
  if (p.delivered !== undefined) parts.push(p.delivered ? "delivered" : "not delivered");
  if (p.status_code) parts.push(`HTTP ${p.status_code}`);
  if (p.error) parts.push(String(p.error));
  if (p.to_section_id) parts.push(`→ ${p.to_section_id}`);
  if (e.type === "approval.timed_out") parts.push(`no answer in time → ${p.on_timeout && p.on_timeout !== "fail" ? p.on_timeout : "fail"}`);
  if (p.wake_at) parts.push(`wakes ${new Date(p.wake_at).toLocaleString()}`);
  if (p.child_run_id) parts.push(`run ${p.child_run_id}`);
  return parts.join(" · ");
}

export function who(by: unknown): string {
  if (typeof by === "string") return by;
  if (by && typeof by === "object") {
    const o = by as Record<string, unknown>;
    return String(o.name ?? o.email ?? o.id ?? "");
  }
  return "";
}
