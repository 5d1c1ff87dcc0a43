// NodeDetail is the side panel of the node selected on a run's canvas:
// its instances (filtered, stepped through), the selected one's input,
// output, error, attempts and events, and what may be done to it.
import { useState } from "react";
import { currentMe, type NodeState, type Run, type StreamEvent } from "../../api";
import { ago, Countdown, Json, span, Status } from "../../components/common";
import { eventWaitText } from "../../components/StitchNode";
import type { LoopInfo } from "../../graph";
import { Link } from "../../router";
import { Answer } from "../approvals/Answer";
import { EventItem, who } from "./events";
import { CompleteByHand, PostEvent, Rerun, RERUNNABLE, SKIPPABLE, ToleratedFailures } from "./NodeActions";
import { ChildRun } from "./RunLinks";
import { aggregate, baseKey, iterationOf, outputOf } from "./runState";

const FILTERS = ["all", "failed", "running", "waiting_for_user", "sleeping", "waiting_for_event", "completed", "skipped", "cancelled"];

export function NodeDetail(props: {
  nodeId: string;
  outcomes: string[];
  // nodeType: the node's type in the run's graph (a Splitter cannot be
  // completed by hand).
  nodeType: string;
  // prompt, label: what a UX node asks a person, and its name, in the
  // run's version ("" when it has none).
  prompt?: string;
  label?: string;
  // remindAfter: a UX node's remindAfterSeconds in the run's version (0:
  // no reminders).
  remindAfter: number;
  // initialKey: the instance to show first (?key=).
  initialKey?: string | null;
  // form: a UX node's form (data.form), null without one.
  form?: Record<string, any> | null;
  // decideHere: the caller may decide a waiting UX node here (else the
  // inbox is pointed to); operate: may retry, rerun, complete by hand.
  decideHere: boolean;
  operate: boolean;
  runStatus: Run["status"];
  states: NodeState[];
  // history: the rows of the node's earlier loop iterations (<key>@<n>).
  history: NodeState[];
  // loop: the loop the node is on, or null.
  loop: LoopInfo | null;
  events: StreamEvent[];
  eventCount: number;
  runId: string;
  onRetry: (key: string) => Promise<void>;
  onAnswered: () => void;
}) {
  const { nodeId, states, events, runId } = props;
  const [filter, setFilter] = useState("all");
  const [key, setKey] = useState<string | null>(
    props.initialKey && states.some((s) => s.key === props.initialKey) ? props.initialKey : states.length === 1 ? states[0].key : null,
  );
  const shown = states.filter((s) => filter === "all" || s.status === filter);
  // upTo: how many instances the list shows, 200 more at a time.
  const [upTo, setUpTo] = useState(200);
  const latest = states.find((s) => s.key === key) ?? (states.length === 1 ? states[0] : null);
  // The iterations of the chosen instance, the current one last; null
  // shows the current one.
  const [iter, setIter] = useState<number | null>(null);
  const rounds = latest ? [...props.history.filter((h) => baseKey(h.key) === latest.key), latest] : [];
  const current = (iter !== null ? rounds.find((r) => iterationOf(r) === iter) : undefined) ?? latest;
  const isLatest = current === latest;
  // An event belongs to the iteration its loop had begun when it came:
  // the loop.iteration events of the instance's loop source split them.
  const loopSrc = latest && props.loop ? props.loop.source + latest.key.slice(nodeId.length) : null;
  const turns = loopSrc
    ? events
        .filter((e) => e.type === "loop.iteration" && e.key === loopSrc && e.payload?.loop === props.loop!.edge)
        .map((e) => e.seq ?? e.id)
        .sort((a, b) => a - b)
    : [];
  const eventIter = (e: StreamEvent) => {
    if (e.type === "loop.iteration") return Number(e.payload?.iteration ?? 1) - 1;
    const at = e.seq ?? e.id;
    let lo = 0;
    let hi = turns.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (turns[mid] < at) lo = mid + 1;
      else hi = mid;
    }
    return lo; // the loop.iteration events before it
  };
  const nodeEvents = current ? events.filter((e) => e.key === baseKey(current.key) && (rounds.length < 2 || eventIter(e) === iterationOf(current))) : [];
  const agg = aggregate(states);
  const isCollector = props.nodeType === "Collector" || current?.type === "Collector";
  const byHand = current?.status === "completed" ? nodeEvents.filter((e) => e.type === "node.completed_by_hand").at(-1) : undefined;
  // What the server lets a person complete by hand: a stuck step of a run
  // still going (a failure a failure edge took on is final).
  const canSkip =
    !!current &&
    isLatest &&
    SKIPPABLE.includes(current.status) &&
    props.runStatus !== "completed" &&
    props.runStatus !== "cancelled" &&
    props.nodeType !== "Splitter" &&
    !(current.status === "failed" && Array.isArray(current.taken));

  return (
    <div className="settings node-detail">
      <h2>{nodeId}</h2>
      {props.nodeType === "UX" && (props.label || props.prompt) && (
        <div className="ux-ask" data-ux-prompt>
          {props.label && <p className="ux-ask-label">{props.label}</p>}
          {props.prompt ? <p className="ux-ask-prompt">{props.prompt}</p> : <p className="muted small">No prompt: the person sees the step's name only.</p>}
        </div>
      )}
      {states.length === 0 && <p className="muted">This node has not started yet.</p>}
      {states.length > 1 && (
        <>
          <p>
            {states.length} instances: {agg.counts.completed ?? 0} ✓ {agg.counts.failed ?? 0} ✗ {agg.counts.running ?? 0} running
            {agg.counts.waiting_for_user ? ` ${agg.counts.waiting_for_user} waiting` : ""}
            {agg.counts.sleeping ? ` ${agg.counts.sleeping} sleeping` : ""}
            {agg.counts.waiting_for_event ? ` ${agg.counts.waiting_for_event} waiting for an event` : ""}
            {agg.counts.skipped ? ` ${agg.counts.skipped} skipped` : ""}
            {agg.counts.cancelled ? ` ${agg.counts.cancelled} cancelled` : ""}
          </p>
          <label htmlFor="inst-filter">Show</label>
          <select id="inst-filter" value={filter} onChange={(e) => setFilter(e.target.value)}>
            {FILTERS.map((f) => (
              <option key={f} value={f}>
                {f.replace(/_/g, " ")}
              </option>
            ))}
          </select>
          <ul className="instances" aria-label="Instances">
            {shown.slice(0, upTo).map((s) => (
              <li key={s.key}>
                <button
                  type="button"
                  className={`linklike ${s.key === key ? "active" : ""}`}
                  aria-pressed={s.key === key}
                  onClick={() => {
                    setKey(s.key);
                    setIter(null);
                  }}
                >
                  <span className="mono">{s.key}</span> <Status status={s.status} />
                </button>
              </li>
            ))}
            {shown.length > upTo && (
              <li>
                <button type="button" className="btn small" data-action="more-instances" onClick={() => setUpTo((n) => n + 200)}>
                  Show {Math.min(200, shown.length - upTo)} more (of {shown.length - upTo} not shown)
                </button>
              </li>
            )}
          </ul>
        </>
      )}
      {latest && rounds.length > 1 && (
        <div className="iterations" role="group" aria-label={`Iterations of ${latest.key}`} data-iterations={rounds.length}>
          <span className="muted small">Iteration</span>
          {stepWindow(rounds.length, rounds.indexOf(current!)).map((i, j, shown) => {
            const r = rounds[i];
            return (
              <span key={r.key}>
                {j > 0 && <span className="sep" aria-hidden="true">{shown[j - 1] === i - 1 ? "· " : "… "}</span>}
                <button
                  type="button"
                  data-iteration={i + 1}
                  data-status={r.status}
                  className={`status-${r.status}`}
                  aria-pressed={r === current}
                  title={`Iteration ${i + 1}: ${r.status.replace(/_/g, " ")}`}
                  onClick={() => setIter(r === latest ? null : iterationOf(r))}
                >
                  {i + 1}
                  {r === latest ? " (current)" : ""}
                </button>
              </span>
            );
          })}
          {rounds.length > STEP_ALL && (
            <select
              aria-label="Go to iteration"
              value={iterationOf(current!)}
              onChange={(e) => {
                const r = rounds.find((x) => iterationOf(x) === Number(e.target.value));
                setIter(!r || r === latest ? null : iterationOf(r));
              }}
            >
              {rounds.map((r, i) => (
                <option key={r.key} value={iterationOf(r)}>
                  {i + 1} · {r.status.replace(/_/g, " ")}
                </option>
              ))}
            </select>
          )}
        </div>
      )}
      {current && (
        <div className="instance" data-iteration={iterationOf(current) + 1}>
          <h3 className="mono">
            {current.key}
            {rounds.length > 1 && (
              <span className="muted">
                {" "}
                · iteration {iterationOf(current) + 1} of {rounds.length}
                {isLatest ? "" : " (earlier)"}
              </span>
            )}
          </h3>
          <dl className="kv">
            <dt>Status</dt>
            <dd>
              <Status status={current.status} />
              {byHand && (
                <span className="by-hand" data-by-hand>
                  {" "}
                  by hand{who(byHand.payload?.by) ? ` by ${who(byHand.payload?.by)}` : ""}, when it was {String(byHand.payload?.from ?? "?").replace(/_/g, " ")}
                </span>
              )}
            </dd>
            <dt>Attempt</dt>
            <dd>
              {current.attempt}
              {current.worker && (
                <span className="muted" data-attempt-worker>
                  {" "}
                  · taken by <span className="mono">{current.worker}</span>
                </span>
              )}
            </dd>
            <dt>Started</dt>
            <dd title={current.started_at ?? ""}>{ago(current.started_at)}</dd>
            <dt>Finished</dt>
            <dd title={current.finished_at ?? ""}>{current.finished_at ? ago(current.finished_at) : "—"}</dd>
            {current.status === "sleeping" && current.wake_at && (
              <>
                <dt>Wakes</dt>
                <dd data-wake>
                  <Countdown at={current.wake_at} before="wakes in" due="waking now…" className="countdown" />
                  <div className="muted small">{new Date(current.wake_at).toLocaleString()}</div>
                </dd>
              </>
            )}
            {current.status === "waiting_for_event" && (
              <>
                <dt>Waiting</dt>
                <dd data-event-wait>{eventWaitText(current.event_name, current.event_key)}</dd>
              </>
            )}
            {current.status === "waiting_for_event" && current.deadline && (
              <>
                <dt>Deadline</dt>
                <dd data-deadline>
                  <Countdown at={current.deadline} before="fails in" due="timing out now…" className="countdown" />
                  <div className="muted small">{new Date(current.deadline).toLocaleString()}</div>
                </dd>
              </>
            )}
            {current.child_run_id && (
              <>
                <dt>Child run</dt>
                <dd data-child-run={current.child_run_id}>
                  <ChildRun id={current.child_run_id} refresh={current.status} />
                </dd>
              </>
            )}
            {current.status === "completed" && String(current.type).toLowerCase() === "http" && typeof outputOf(current)?.status === "number" && (
              <>
                <dt>Response</dt>
                <dd data-http-response>HTTP {outputOf(current)?.status}</dd>
              </>
            )}
            {current.status === "waiting_for_user" && current.deadline && (
              <>
                <dt>Deadline</dt>
                <dd data-deadline>
                  <Countdown at={current.deadline} before="times out in" due="timing out now…" className="countdown" />
                  <div className="muted small">{new Date(current.deadline).toLocaleString()}</div>
                </dd>
              </>
            )}
            {current.status === "waiting_for_user" && props.remindAfter > 0 && (
              <>
                <dt>Reminders</dt>
                <dd data-remind>
                  every {span(props.remindAfter * 1000)} while it waits
                  {(() => {
                    const n = nodeEvents.filter((e) => e.type === "node.reminder").length;
                    return n ? ` · ${n} sent` : " · none sent yet";
                  })()}
                </dd>
              </>
            )}
            {Array.isArray(current.taken) && (
              <>
                <dt>Took</dt>
                <dd className="mono" data-taken-list>
                  {current.taken.length ? current.taken.map((t) => `→ ${t}`).join(", ") : "no edge"}
                </dd>
              </>
            )}
            {outputOf(current)?.decision?.outcome && (
              <>
                <dt>Decision</dt>
                <dd>
                  <strong>{String(outputOf(current)?.decision.outcome)}</strong>
                  {who(outputOf(current)?.decision.by) ? ` by ${who(outputOf(current)?.decision.by)}` : ""}
                  {outputOf(current)?.decision.comment ? ` — “${outputOf(current)?.decision.comment}”` : ""}
                </dd>
              </>
            )}
          </dl>
          {current.status === "skipped" && <p className="muted small">Skipped: none of the edges into this step was taken, so it did not run.</p>}
          {current.status === "sleeping" && (
            <p className="muted small">Sleeping: this Wait step goes on with its input when its time comes. Cancelling the run ends the wait.</p>
          )}
          {current.status === "waiting_for_event" && isLatest && props.operate && (
            <PostEvent key={current.key} name={current.event_name ?? ""} eventKey={current.event_key ?? ""} onDone={props.onAnswered} />
          )}
          {current.status === "failed" && isLatest && props.operate && (
            <button type="button" className="btn primary" onClick={() => void props.onRetry(current.key)}>
              {isCollector ? "Retry gather" : `Retry ${current.key}`}
            </button>
          )}
          {isCollector && isLatest && props.operate && (current.status === "pending" || current.status === "running") && (
            // Retrying a gather that has not failed does nothing: it fires
            // by itself once its items have arrived. Say so, rather than
            // offer a button that answers 409.
            <p className="muted small" data-retry-gather="waiting">
              <button type="button" className="btn small" disabled title="Only a failed gather can be retried">
                Retry gather
              </button>{" "}
              Still gathering: it goes on by itself once every item has arrived. Retry a failed item instead.
            </p>
          )}
          {current && isLatest && props.operate && RERUNNABLE.includes(current.status) && props.runStatus !== "cancelled" && !props.loop && (
            <Rerun key={`${current.key}-${current.attempt}`} runId={runId} state={current} onDone={props.onAnswered} />
          )}
          {canSkip && props.operate && <CompleteByHand key={current.key} runId={runId} nodeKey={current.key} status={current.status} runStatus={props.runStatus} onDone={props.onAnswered} />}
          {current.status === "waiting_for_user" && isLatest && props.decideHere && (
            <Answer key={`${current.key}-${current.attempt}`} runId={runId} nodeKey={current.key} outcomes={props.outcomes} form={props.form ?? null} onDone={props.onAnswered} />
          )}
          {current.status === "waiting_for_user" && isLatest && !props.decideHere && currentMe().me?.role === "approver" && (
            <p className="muted small">
              Decide this step in the <Link to="/approvals">approvals inbox</Link>.
            </p>
          )}
          {(props.nodeType === "Collector" || current.type === "Collector") && Array.isArray(outputOf(current)?.errors) && outputOf(current)?.errors.length > 0 && (
            <ToleratedFailures errors={outputOf(current)?.errors} total={Array.isArray(outputOf(current)?.items) ? outputOf(current)?.items.length : null} />
          )}
          {current.error && (
            <>
              <h3>Error</h3>
              <pre className="json error-text">{current.error}</pre>
            </>
          )}
          <h3>Input</h3>
          <Json value={current.input} label="input" />
          <h3>Output</h3>
          <Json value={current.output} label="output" />
          <h3>Events</h3>
          {nodeEvents.length === 0 ? (
            <p className="muted">No events yet.</p>
          ) : (
            <ol className="events">
              {nodeEvents.map((e) => (
                <EventItem key={e.id} e={e} />
              ))}
            </ol>
          )}
        </div>
      )}
    </div>
  );
}

// A loop's iterations are all listed up to STEP_ALL; beyond, the first,
// the last few and the one shown (a select reaches the others).
const STEP_ALL = 12;

export function stepWindow(n: number, at: number): number[] {
  if (n <= STEP_ALL) return Array.from({ length: n }, (_, i) => i);
  const keep = new Set([0, at, ...Array.from({ length: 8 }, (_, i) => n - 8 + i)]);
  return [...keep].filter((i) => i >= 0 && i < n).sort((a, b) => a - b);
}
