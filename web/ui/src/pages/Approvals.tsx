import { useEffect, useState, type FormEvent } from "react";
import { api, describe, stream, type Approval, type Flow } from "../api";
import { ago, Countdown, Empty, ErrorBox, Json, span, Spinner, useLoad, useThrottled } from "../components/common";
import { outcomesOf } from "../graph";
import { Link } from "../router";

// Approvals lists every node waiting for a person, live.
export function Approvals() {
  const { data, error, loading, reload } = useLoad(
    () => api<{ approvals: Approval[]; next_cursor?: string | null }>("GET", "/approvals?limit=500"),
    [],
  );
  // Later pages (oldest first), loaded on demand; a reload starts over.
  const [more, setMore] = useState<{ approvals: Approval[]; next: string | null } | null>(null);
  useEffect(() => setMore(null), [data]);
  const next = more ? more.next : (data?.next_cursor ?? null);
  const loadMore = () => {
    if (!next) return;
    api<{ approvals: Approval[]; next_cursor?: string | null }>(
      "GET",
      `/approvals?limit=500&cursor=${encodeURIComponent(next)}`,
    ).then((p) => setMore((m) => ({ approvals: [...(m?.approvals ?? []), ...p.approvals], next: p.next_cursor ?? null })));
  };
  const approvals = data ? [...data.approvals, ...(more?.approvals ?? [])] : [];
  const reminders = useReminders(approvals);
  const refresh = useThrottled(reload, 300);
  useEffect(
    () =>
      stream("/events", (e) => {
        if (e.type === "node.status" || e.type.startsWith("run.")) refresh();
      }),
    [refresh],
  );
  return (
    <section className="page">
      <div className="page-head">
        <h1>Approvals</h1>
        {data && (
          <span className="muted">
            {approvals.length}
            {next ? "+" : ""} waiting
          </span>
        )}
      </div>
      <ErrorBox error={error} onRetry={reload} />
      {loading && <Spinner label="Loading approvals…" />}
      {data && approvals.length === 0 && (
        <Empty title="Nothing is waiting for you">
          <p>When a run reaches an approval step, it appears here at once.</p>
        </Empty>
      )}
      <ul className="approvals">
        {approvals.map((a) => (
          <li key={`${a.run_id}/${a.key}`} className="card approval" data-approval={`${a.run_id}/${a.key}`}>
            <div className="approval-head">
              <h2>{a.label || a.node_id}</h2>
              <span className="approval-times">
                <span className="muted" title={a.waiting_since}>
                  waiting {ago(a.waiting_since).replace(" ago", "")}
                </span>
                {(a.iteration ?? 0) > 0 && (
                  <>
                    {" · "}
                    <span className="iter-chip" data-iteration={a.iteration! + 1} title="The loop this step is on went round: this is a later pass">
                      iteration {a.iteration! + 1}
                    </span>
                  </>
                )}
                {a.deadline && (
                  <>
                    {" · "}
                    <Countdown at={a.deadline} before="times out in" due="timing out now…" className="deadline" />
                    {a.on_timeout && (
                      <span className="on-timeout" data-on-timeout={a.on_timeout} title={a.on_timeout === "fail" ? "The step fails at its deadline" : `The step is answered “${a.on_timeout}” at its deadline`}>
                        {" "}
                        → {a.on_timeout}
                      </span>
                    )}
                  </>
                )}
                {reminders[`${a.flow_id}/${a.node_id}`] > 0 && (
                  <>
                    {" · "}
                    <span
                      className="remind"
                      data-remind={reminders[`${a.flow_id}/${a.node_id}`]}
                      title="A reminder (approval.reminder) goes to the notification webhook at each interval while nobody answers"
                    >
                      🔔 reminded every {span(reminders[`${a.flow_id}/${a.node_id}`] * 1000)}
                    </span>
                  </>
                )}
              </span>
            </div>
            {a.prompt && <p className="prompt">{a.prompt}</p>}
            <p className="muted small">
              <Link to={`/runs/${a.run_id}`}>Run {a.run_id.slice(0, 8)}</Link> · step <span className="mono">{a.key}</span>
              {a.entity && (
                <>
                  {" "}
                  · for{" "}
                  <Link to={`/boards/${a.entity.board_id}?entity=${a.entity.id}`}>
                    <strong>{a.entity.name || a.entity.id.slice(0, 8)}</strong>
                  </Link>
                  {a.entity.email ? ` (${a.entity.email})` : ""}
                </>
              )}
            </p>
            <details>
              <summary>Input</summary>
              <Json value={a.input} label="input" />
            </details>
            <Answer runId={a.run_id} nodeKey={a.key} outcomes={outcomesOf({ outcomes: a.outcomes })} onDone={reload} />
          </li>
        ))}
      </ul>
      {next && (
        <button type="button" className="btn ghost" onClick={loadMore}>
          Show more (the next 500, oldest first)
        </button>
      )}
    </section>
  );
}

// useReminders reads the flows of the approvals shown (once each) for
// their UX nodes' remindAfterSeconds, keyed "<flow id>/<node id>". The
// approvals API does not carry it, so it is the flow's current version's
// setting.
function useReminders(approvals: Approval[]): Record<string, number> {
  const [byFlow, setByFlow] = useState<Record<string, Record<string, number> | null>>({});
  const ids = [...new Set(approvals.map((a) => a.flow_id))].sort().join(",");
  useEffect(() => {
    for (const id of ids ? ids.split(",") : []) {
      if (id in byFlow) continue;
      setByFlow((m) => ({ ...m, [id]: null }));
      api<Flow>("GET", `/flows/${id}`).then(
        (f) => {
          const r: Record<string, number> = {};
          for (const n of f.graph?.nodes ?? []) {
            const v = Number(n.data?.remindAfterSeconds);
            if (n.type === "UX" && v > 0) r[n.id] = v;
          }
          setByFlow((m) => ({ ...m, [id]: r }));
        },
        () => undefined,
      );
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [ids]);
  const out: Record<string, number> = {};
  for (const [f, nodes] of Object.entries(byFlow)) for (const [n, v] of Object.entries(nodes ?? {})) out[`${f}/${n}`] = v;
  return out;
}

// Answer shows one button per outcome of a waiting UX node, with an
// optional comment and an optional answer (JSON, kept in the node's
// output as decision.answer).
export function Answer({ runId, nodeKey, outcomes, onDone }: { runId: string; nodeKey: string; outcomes: string[]; onDone: () => void }) {
  const [comment, setComment] = useState("");
  const [answer, setAnswer] = useState("");
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const id = `${runId}-${nodeKey}`;

  async function choose(outcome: string) {
    const body: Record<string, unknown> = { outcome };
    if (comment.trim()) body.comment = comment.trim();
    const t = answer.trim();
    if (t) {
      try {
        body.output = JSON.parse(t);
      } catch {
        setError('The answer is not JSON (e.g. {"price": 120}); a note belongs in the comment.');
        return;
      }
    }
    setBusy(outcome);
    setError(null);
    try {
      await api("POST", `/runs/${runId}/nodes/${encodeURIComponent(nodeKey)}/complete`, body);
      onDone();
    } catch (err) {
      setError(describe(err));
    } finally {
      setBusy(null);
    }
  }

  return (
    <form
      className="answer"
      aria-label={`Decide ${nodeKey}`}
      onSubmit={(e: FormEvent) => {
        e.preventDefault();
        void choose(outcomes[0]);
      }}
    >
      <label htmlFor={`comment-${id}`}>Comment (optional)</label>
      <textarea id={`comment-${id}`} className="comment" rows={2} value={comment} onChange={(e) => setComment(e.target.value)} />
      <details>
        <summary>Answer with data (optional)</summary>
        <label htmlFor={`answer-${id}`} className="sr-only">
          Answer as JSON
        </label>
        <textarea
          id={`answer-${id}`}
          className="mono"
          rows={3}
          placeholder='{"price": 120}'
          value={answer}
          onChange={(e) => setAnswer(e.target.value)}
          aria-invalid={!!error && !!answer.trim()}
        />
      </details>
      {error && (
        <p className="field-error" role="alert">
          {error}
        </p>
      )}
      <div className="outcome-buttons" role="group" aria-label="Outcomes">
        {outcomes.map((o, i) => (
          <button
            key={o}
            type="button"
            data-outcome={o}
            className={`btn ${i === 0 ? "primary" : /^(reject|decline|deny|refuse|no)\b/i.test(o) ? "danger" : ""}`}
            disabled={busy !== null}
            onClick={() => void choose(o)}
          >
            {busy === o ? "Sending…" : outcomeLabel(o)}
          </button>
        ))}
      </div>
    </form>
  );
}

export function outcomeLabel(o: string): string {
  return o ? o[0].toUpperCase() + o.slice(1).replace(/_/g, " ") : o;
}
