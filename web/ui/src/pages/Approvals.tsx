import { useEffect, useMemo, useRef, useState, type FormEvent } from "react";
import { api, ApiError, can, currentMe, describe, stream, type Approval, type Me, type Problem, type Run, type Vote } from "../api";
import { ago, Countdown, Empty, ErrorBox, Json, span, Spinner, useThrottled } from "../components/common";
import { TaskForm, type TaskFormHandle } from "../components/LazyTaskForm";
import { outcomesOf } from "../graph";
import { Link, navigate } from "../router";

type Tab = "me" | "groups" | "all";
const TAB_LABEL: Record<Tab, string> = { me: "Assigned to me", groups: "My groups", all: "All" };
type Page = { approvals: Approval[]; next_cursor?: string | null };

// tabsFor: an approver sees only what they may decide, so "All" is for
// the other roles.
function tabsFor(me: Me | null): Tab[] {
  return me?.role === "approver" ? ["me", "groups"] : ["me", "groups", "all"];
}

// Approvals is the inbox: the steps waiting for a person, in three tabs
// (assigned to me or to nobody, to one of my groups, all), with counts,
// live over GET /approvals/stream (polled when the server has no stream).
export function Approvals({ tab: asked = null }: { tab?: string | null }) {
  const me = currentMe().me;
  const tabs = tabsFor(me);
  const [pages, setPages] = useState<Partial<Record<Tab, Page>>>({});
  const [error, setError] = useState<unknown>(null);
  const [loaded, setLoaded] = useState(false);
  // Later pages (oldest first) of the tab shown, loaded on demand.
  const [more, setMore] = useState<{ tab: Tab; approvals: Approval[]; next: string | null } | null>(null);
  const gen = useRef(0);
  const load = useMemo(
    () => async () => {
      const g = ++gen.current;
      try {
        const got = await Promise.all(tabs.map((t) => api<Page>("GET", `/approvals?assigned=${t}&limit=500`)));
        if (g !== gen.current) return;
        const next: Partial<Record<Tab, Page>> = {};
        tabs.forEach((t, i) => (next[t] = got[i]));
        setPages(next);
        setMore(null);
        setError(null);
      } catch (err) {
        if (g === gen.current) setError(err);
      } finally {
        if (g === gen.current) setLoaded(true);
      }
    },
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [tabs.join(",")],
  );
  useEffect(() => void load(), [load]);
  const refresh = useThrottled(() => void load(), 300);
  // Live: the inbox stream says when the caller's approvals may have
  // changed. Without it (an older server), poll.
  const [live, setLive] = useState<boolean | null>(null);
  useEffect(
    () =>
      stream(
        "/approvals/stream?assigned=all",
        () => refresh(),
        (on) => setLive(on),
        [404, 405],
      ),
    [refresh],
  );
  useEffect(() => {
    if (live) return;
    const t = window.setInterval(refresh, 3000);
    return () => window.clearInterval(t);
  }, [live, refresh]);

  // The tab: the one asked for (?assigned=), else the first with something
  // in it when the inbox was first read, else "Assigned to me".
  const [picked, setPicked] = useState<Tab | null>(tabs.includes(asked as Tab) ? (asked as Tab) : null);
  useEffect(() => {
    if (picked || !loaded) return;
    setPicked(tabs.find((t) => (pages[t]?.approvals.length ?? 0) > 0) ?? "me");
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [loaded]);
  const tab: Tab = picked ?? "me";
  const page = pages[tab];
  const extra = more?.tab === tab ? more : null;
  const next = extra ? extra.next : (page?.next_cursor ?? null);
  const approvals = page ? [...page.approvals, ...(extra?.approvals ?? [])] : [];
  const loadMore = () => {
    if (!next) return;
    api<Page>("GET", `/approvals?assigned=${tab}&limit=500&cursor=${encodeURIComponent(next)}`).then(
      (p) => setMore((m) => ({ tab, approvals: [...(m?.tab === tab ? m.approvals : []), ...p.approvals], next: p.next_cursor ?? null })),
      setError,
    );
  };
  const count = (t: Tab) => {
    const p = pages[t];
    return p ? `${p.approvals.length}${p.next_cursor ? "+" : ""}` : "…";
  };
  const choose = (t: Tab) => {
    setPicked(t);
    navigate(`/approvals?assigned=${t}`, true);
  };

  return (
    <section className="page">
      <div className="page-head">
        <h1>Approvals</h1>
        <span className={`live ${live ? "on" : ""}`} aria-live="polite">
          {live ? "● live" : live === false ? "○ checking every few seconds" : ""}
        </span>
      </div>
      <div className="inbox-tabs" role="tablist" aria-label="Which approvals">
        {tabs.map((t) => (
          <button
            key={t}
            type="button"
            role="tab"
            id={`tab-${t}`}
            data-tab={t}
            aria-selected={t === tab}
            aria-controls="inbox"
            className={`inbox-tab ${t === tab ? "active" : ""}`}
            onClick={() => choose(t)}
          >
            {TAB_LABEL[t]} <span className="count" data-count={pages[t] ? pages[t]!.approvals.length : undefined}>{count(t)}</span>
          </button>
        ))}
      </div>
      <ErrorBox error={error} onRetry={() => void load()} />
      {!loaded && <Spinner label="Loading approvals…" />}
      {!can(me, "decide") && loaded && (
        <p className="banner subtle" data-readonly>
          Your role ({me?.role}) cannot decide approvals: you see them here, an approver or an admin decides.
        </p>
      )}
      <div id="inbox" role="tabpanel" aria-labelledby={`tab-${tab}`}>
        {page && approvals.length === 0 && (
          <Empty title="Nothing is waiting for you">
            <p>
              {tab === "me"
                ? "Steps assigned to you, or to nobody in particular, appear here as soon as a run reaches them."
                : tab === "groups"
                  ? `Steps assigned to ${me?.groups?.length ? `your groups (${me.groups.join(", ")})` : "a group of yours"} appear here.`
                  : "When a run reaches an approval step, it appears here at once."}
            </p>
          </Empty>
        )}
        <ul className="approvals">
          {approvals.map((a) => (
            <ApprovalCard key={`${a.run_id}/${a.key}`} a={a} me={me} onDone={refresh} />
          ))}
        </ul>
        {next && (
          <button type="button" className="btn ghost" onClick={loadMore}>
            Show more (the next 500, oldest first)
          </button>
        )}
      </div>
    </section>
  );
}

// assignedTo says whom a step is assigned to, in words.
function assignedTo(a: Approval): string {
  const users = a.assignees?.users ?? [];
  const groups = a.assignees?.groups ?? [];
  if (!a.assignees || (users.length === 0 && groups.length === 0)) return "anyone who may approve";
  const parts: string[] = [];
  if (users.length) parts.push(users.join(", "));
  if (groups.length) parts.push(`${groups.length === 1 ? "group" : "groups"} ${groups.join(", ")}`);
  return parts.join(" and ");
}

// summaryText shows a summary value: text as it is, other JSON compactly.
export function summaryText(v: unknown): string {
  if (v === null || v === undefined) return "—";
  if (typeof v === "string") return v;
  return JSON.stringify(v);
}

// Summary is a UX step's data.summary: the values to decide by, labelled.
export function Summary({ items }: { items: { label: string; path: string; value: unknown }[] }) {
  return (
    <dl className="approval-summary" data-summary>
      {items.map((it, i) => (
        <div key={i} data-summary-item={it.label}>
          <dt title={it.path}>{it.label}</dt>
          <dd>{summaryText(it.value)}</dd>
        </div>
      ))}
    </dl>
  );
}

function ApprovalCard({ a, me, onDone }: { a: Approval; me: Me | null; onDone: () => void }) {
  const need = a.required_approvals ?? 1;
  const votes = a.votes ?? [];
  const mine = votes.find((v) => me?.email && v.by.toLowerCase() === me.email.toLowerCase());
  const hasContext = a.input !== null && a.input !== undefined;
  return (
    <li className="card approval" data-approval={`${a.run_id}/${a.key}`}>
      <div className="approval-head">
        {/* The entity decided about is the card's title; the step names it. */}
        <h2 data-approval-title>
          {a.entity ? (
            <>
              {a.entity.name || a.entity.id.slice(0, 8)} <span className="approval-step">· {a.label || a.node_id}</span>
            </>
          ) : (
            a.label || a.node_id
          )}
        </h2>
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
          {(a as any).remind_after_seconds > 0 && (
            <>
              {" · "}
              <span
                className="remind"
                data-remind={(a as any).remind_after_seconds}
                title="A reminder (approval.reminder) goes to the notification webhook at each interval while nobody answers"
              >
                🔔 reminded every {span((a as any).remind_after_seconds * 1000)}
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
            {can(me, "read") ? (
              <Link to={`/boards/${a.entity.board_id}?entity=${a.entity.id}`}>
                <strong>{a.entity.name || a.entity.id.slice(0, 8)}</strong>
              </Link>
            ) : (
              <strong>{a.entity.name || a.entity.id.slice(0, 8)}</strong>
            )}
            {a.entity.email ? ` (${a.entity.email})` : ""}
          </>
        )}
        {" · "}
        <span className="assignees" data-assignees>
          assigned to {assignedTo(a)}
        </span>
      </p>
      {a.summary && a.summary.length > 0 && <Summary items={a.summary} />}
      {need > 1 && <VoteTally need={need} votes={votes} />}
      <div className={`approval-body ${a.form ? "with-form" : ""}`}>
        <div className="approval-context">
          {a.form || hasContext || a.entity ? (
            <>
              <h3>Input</h3>
              <Json value={a.input} label="input" />
              {a.entity && (
                <>
                  <h3>Entity</h3>
                  <dl className="entity-facts">
                    <dt>Name</dt>
                    <dd>{a.entity.name || "—"}</dd>
                    <dt>Type</dt>
                    <dd>{a.entity.type}</dd>
                    {a.entity.email && (
                      <>
                        <dt>Email</dt>
                        <dd>{a.entity.email}</dd>
                      </>
                    )}
                  </dl>
                </>
              )}
            </>
          ) : null}
        </div>
        <div className="approval-decide">
          {mine ? (
            <p className="banner ok" data-voted={mine.outcome}>
              You chose “{mine.outcome}”{need > 1 ? ` · waiting for ${Math.max(0, need - votes.filter((v) => v.outcome === mine.outcome).length)} more` : ""}.
            </p>
          ) : can(me, "decide") ? (
            <Answer runId={a.run_id} nodeKey={a.key} outcomes={outcomesOf({ outcomes: a.outcomes })} form={a.form ?? null} onDone={onDone} />
          ) : null}
        </div>
      </div>
    </li>
  );
}

// VoteTally shows an N-of-M step's votes so far: "1 of 2 approvals".
function VoteTally({ need, votes }: { need: number; votes: Vote[] }) {
  const byOutcome = new Map<string, number>();
  for (const v of votes) byOutcome.set(v.outcome, (byOutcome.get(v.outcome) ?? 0) + 1);
  const lead = [...byOutcome.entries()].sort((x, y) => y[1] - x[1])[0];
  const approvals = byOutcome.get("approve") ?? (lead ? lead[1] : 0);
  return (
    <div className="votes" data-votes={votes.length} data-need={need}>
      <strong className="tally">
        {approvals} of {need} approvals
      </strong>
      <progress max={need} value={Math.min(approvals, need)} aria-label={`${approvals} of ${need} approvals`} />
      {votes.length > 0 && (
        <ul className="vote-list">
          {votes.map((v) => (
            <li key={v.by} data-by={v.by}>
              <strong>{v.by}</strong> chose “{v.outcome}” <span className="muted" title={v.at}>{ago(v.at)}</span>
              {v.comment ? <span className="muted"> — {v.comment}</span> : null}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

// Answer shows one button per outcome of a waiting UX node, with an
// optional comment, and the answer: the node's form when it has one, else
// optional JSON (kept in the node's output as decision.answer). The
// server's refusals are shown as it words them: a form's problems next to
// their fields, "not assigned to you", separation of duties, a second
// vote by the same person.
export function Answer({
  runId,
  nodeKey,
  outcomes,
  form = null,
  onDone,
}: {
  runId: string;
  nodeKey: string;
  outcomes: string[];
  form?: Record<string, any> | null;
  onDone: () => void;
}) {
  const [comment, setComment] = useState("");
  const [answer, setAnswer] = useState("");
  const [formData, setFormData] = useState<any>(undefined);
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<{ code: string; message: string } | null>(null);
  const [problems, setProblems] = useState<Problem[]>([]);
  const [note, setNote] = useState<string | null>(null);
  const formRef = useRef<TaskFormHandle>(null);
  const id = `${runId}-${nodeKey}`;

  async function choose(outcome: string, index: number) {
    const body: Record<string, unknown> = { outcome };
    if (comment.trim()) body.comment = comment.trim();
    setError(null);
    setNote(null);
    if (form) {
      // The first outcome completes the node, so its answer must fit the
      // form; another outcome may not (a reject without an edge keeps no
      // answer): the server decides and says so.
      if (index === 0 && formRef.current && !formRef.current.check()) {
        setProblems([]);
        setError({ code: "form_invalid", message: "The answer does not fit the form: see the fields marked above." });
        return;
      }
      body.output = formData ?? null;
    } else {
      const t = answer.trim();
      if (t) {
        try {
          body.output = JSON.parse(t);
        } catch {
          setError({ code: "local", message: 'The answer is not JSON (e.g. {"price": 120}); a note belongs in the comment.' });
          return;
        }
      }
    }
    setBusy(outcome);
    setProblems([]);
    try {
      // The answer is the run: an N-of-M step still waits after a vote
      // that does not decide it.
      const run = await api<Run | undefined>("POST", `/runs/${runId}/nodes/${encodeURIComponent(nodeKey)}/complete`, body);
      if (run?.nodes?.[nodeKey]?.status === "waiting_for_user") setNote(`Your “${outcome}” is counted; the step waits for more people.`);
      onDone();
    } catch (err) {
      const formProblems = err instanceof ApiError ? err.details.filter((p) => p.code === "form_invalid") : [];
      if (formProblems.length) {
        setProblems(formProblems);
        setError({ code: "form_invalid", message: `${err instanceof ApiError ? err.message : "The answer does not fit the form"}: see the fields marked above.` });
      } else if (err instanceof ApiError && err.status === 403 && err.code === "forbidden") {
        setError({ code: "forbidden", message: `Refused: ${err.message.replace(/^forbidden: /, "")}` });
      } else if (err instanceof ApiError && err.status === 409) {
        setError({ code: "conflict", message: err.message || "Someone decided this step meanwhile." });
        onDone();
      } else setError({ code: err instanceof ApiError ? err.code : "error", message: describe(err) });
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
        void choose(outcomes[0], 0);
      }}
    >
      {form && (
        <TaskForm
          ref={formRef}
          id={id}
          schema={form}
          value={formData}
          onChange={(v) => {
            setFormData(v);
            if (problems.length) setProblems([]);
          }}
          serverProblems={problems}
          disabled={busy !== null}
        />
      )}
      <label htmlFor={`comment-${id}`}>Comment (optional)</label>
      <textarea id={`comment-${id}`} className="comment" rows={2} value={comment} onChange={(e) => setComment(e.target.value)} />
      {!form && (
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
            aria-invalid={!!error && error.code === "local"}
          />
        </details>
      )}
      {error && (
        <p className="field-error decide-error" role="alert" data-code={error.code}>
          {error.message}
        </p>
      )}
      {note && (
        <p className="banner ok" role="status">
          {note}
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
            onClick={() => void choose(o, i)}
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
