import { useCallback, useEffect, useMemo, useState } from "react";
import { api, can, currentMe, stream, type Run, type StreamEvent, type Task } from "../api";
import { ErrorBox, isNotFound, NotFound, Spinner, Status, useThrottled } from "../components/common";
import { journeyKindText, taskEventText } from "../components/taskwords";
import { Link } from "../router";
import { Age, ApprovalCard, labelledValues, Refused, runTail, Summary } from "./approvals/ApprovalCard";
import { RunCanvas } from "./runview/RunCanvas";

// TaskPage is one task — a step a person decides — on a page of its own
// (/approvals/{run}/{key}): its card while it waits (claim, reassign,
// decide), the run's flow drawn read-only with labels and the paths
// taken, the journey of the run's entity, and the task's history: claims,
// reassignments, escalations, votes and how it ended. Live over the run's
// events.
export function TaskPage({ runId, nodeKey }: { runId: string; nodeKey: string }) {
  const me = currentMe().me;
  const [task, setTask] = useState<Task | null>(null);
  const [run, setRun] = useState<Run | null>(null);
  const [error, setError] = useState<unknown>(null);
  const load = useCallback(async () => {
    try {
      const [t, r] = await Promise.all([
        api<Task>("GET", `/runs/${runId}/nodes/${encodeURIComponent(nodeKey)}/task`),
        api<Run>("GET", `/runs/${runId}`),
      ]);
      setTask(t);
      setRun(r);
      setError(null);
    } catch (err) {
      setError(err);
    }
  }, [runId, nodeKey]);
  useEffect(() => void load(), [load]);
  const refresh = useThrottled(() => void load(), 300);
  const [refused, setRefused] = useState<string | null>(null);
  const done = (why?: string) => {
    setRefused(why ?? null);
    refresh();
  };
  const [live, setLive] = useState(false);
  useEffect(() => stream(`/runs/${runId}/events`, () => refresh(), setLive), [runId, refresh]);
  const graph = useMemo(() => task?.graph ?? null, [task]);

  if (error && !task && isNotFound(error)) return <NotFound what="task" id={`${runId}/${nodeKey}`} back="/approvals" backLabel="All approvals" />;
  if (error && !task) return <ErrorBox error={error} onRetry={() => void load()} />;
  if (!task || !run) return <Spinner label="Loading task…" />;
  const a = task.approval;
  const name = task.entity?.name || task.entity?.type;
  return (
    <section className="page task-page" aria-label="Task" data-task={`${runId}/${nodeKey}`} data-task-status={task.status}>
      <p className="crumbs">
        <Link to="/approvals">Approvals</Link> › {task.label}
      </p>
      <div className="page-head">
        <h1 data-task-title>
          {name ? (
            <>
              {name} <span className="approval-step">· {task.label}</span>
            </>
          ) : (
            task.label
          )}
        </h1>
        <Status status={task.status} />
        <span className={`live ${live ? "on" : ""}`} aria-live="polite">
          {live ? "● live" : "○ reconnecting…"}
        </span>
      </div>
      <p className="muted small">
        {task.flow_name} ·{" "}
        <Link to={`/runs/${runId}?key=${encodeURIComponent(nodeKey)}`} title={runId}>
          run <span className="mono">{runTail(runId)}</span>
        </Link>{" "}
        ({run.status}) · step <span className="mono">{nodeKey}</span>
      </p>
      <Refused message={refused} onDismiss={() => setRefused(null)} />
      {a ? (
        <ul className="approvals">
          <ApprovalCard a={a} me={me} onDone={done} page />
        </ul>
      ) : (
        <div className="card task-done" data-task-done>
          <p>
            <strong>No longer waiting</strong>: this step is {task.status.replace(/_/g, " ")}.
          </p>
          {task.decisions.length > 0 && <Decisions task={task} />}
          {task.run_input !== null && task.run_input !== undefined && <Summary items={labelledValues(task.run_input)} source="run-input" />}
        </div>
      )}
      <div className="task-grid">
        <div className="task-flow">
          <h2>Where it stands</h2>
          {graph && <RunCanvas graph={graph} run={run} mark={run.nodes?.[nodeKey]?.node_id ?? nodeKey} />}
        </div>
        <aside className="task-side">
          <h2>History</h2>
          <History task={task} />
          {task.entity && (
            <>
              <h2>Journey of {task.entity.name || task.entity.type}</h2>
              <ol className="timeline" aria-label="Journey" data-task-journey>
                {task.journey.map((j) => (
                  <li key={j.id} data-journey-kind={j.kind}>
                    <span className="muted small" title={j.created_at}>
                      {new Date(j.created_at).toLocaleString()}
                    </span>
                    <div>
                      <strong>{journeyKindText(j) || j.kind.replace(/_/g, " ")}</strong>
                      {!journeyKindText(j) && j.to_section_id && <> → {j.to_section_id}</>}
                      {j.actor && <span className="muted small"> by {j.actor}</span>}
                      {j.comment && <q className="journey-comment">{j.comment}</q>}
                    </div>
                  </li>
                ))}
              </ol>
              {can(me, "read") && (
                <Link to={`/boards/${task.entity.board_id}?entity=${task.entity.id}`} className="small">
                  The whole journey on the board
                </Link>
              )}
            </>
          )}
        </aside>
      </div>
    </section>
  );
}

// History lists the task's events in words, oldest first.
function History({ task }: { task: Task }) {
  const items = task.history.map((e: StreamEvent) => ({ e, text: taskEventText(e) })).filter((x) => x.text);
  if (!items.length) return <p className="muted">Nothing yet.</p>;
  return (
    <ol className="timeline task-history" aria-label="History" data-task-history>
      {items.map(({ e, text }) => (
        <li key={e.id} data-event={e.type}>
          <span className="muted small" title={e.created_at}>
            {new Date(e.created_at).toLocaleString()} (<Age since={e.created_at} prefix="" /> ago)
          </span>
          <div>{text}</div>
        </li>
      ))}
      {task.decisions.map((d, i) => (
        <li key={`d${i}`} data-decision={d.outcome}>
          <span className="muted small" title={d.at}>
            {new Date(d.at).toLocaleString()}
          </span>
          <div>
            <strong>{d.by}</strong> chose “{d.outcome}”{d.for ? ` for ${d.for}` : ""}
            {d.comment ? <q className="journey-comment">{d.comment}</q> : null}
          </div>
        </li>
      ))}
    </ol>
  );
}

function Decisions({ task }: { task: Task }) {
  return (
    <ul className="vote-list" data-decisions>
      {task.decisions.map((d, i) => (
        <li key={i}>
          <strong>{d.by}</strong> chose “{d.outcome}”{d.for ? ` for ${d.for}` : ""}
          {d.comment ? <span className="muted"> — {d.comment}</span> : null}
        </li>
      ))}
    </ul>
  );
}
