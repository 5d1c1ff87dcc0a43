// ApprovalCard is one waiting decision as the inbox and a task page show it:
// what is asked, of whom, since when, its summary and votes, its task
// actions (claim, delegate) and the answer form.
import { useState, type FormEvent } from "react";
import { api, ApiError, can, describe, type Approval, type Escalation, type Me, type Vote } from "../../api";
import { ago, Countdown, Json, span, useNow } from "../../components/common";
import { after, assigneesText, whomText } from "../../components/taskwords";
import { outcomesOf } from "../../graph";
import { Link } from "../../router";
import { Answer } from "./Answer";

// assignedTo says whom a step is assigned to, in words.
function assignedTo(a: Approval): string {
  return assigneesText(a.assignees);
}

// summaryText shows a summary value: text as it is, numbers and true or
// false as JSON writes them, a list as its items and an object as its
// labelled fields ("Sku: a; Sku: b"), not as JSON; at most 300
// characters.
export function summaryText(v: unknown): string {
  const t = valueWords(v, 0);
  return t.length > 300 ? t.slice(0, 299) + "…" : t;
}

function valueWords(v: unknown, depth: number): string {
  if (v === null || v === undefined) return "—";
  if (typeof v === "string") return v;
  if (typeof v !== "object" || depth > 2) return JSON.stringify(v);
  if (Array.isArray(v)) {
    if (v.length === 0) return "none";
    const objects = v.some((x) => x !== null && typeof x === "object");
    return v.map((x) => valueWords(x, depth + 1)).join(objects ? "; " : ", ");
  }
  const fields = Object.entries(v as Record<string, unknown>).map(([k, x]) => `${fieldLabel(k)}: ${valueWords(x, depth + 1)}`);
  return fields.length ? (depth > 0 ? fields.join(", ") : fields.join("; ")) : "—";
}

// Summary is a UX step's data.summary: the values to decide by, labelled.
export function Summary({ items, source = "summary" }: { items: { label: string; path: string; value: unknown }[]; source?: string }) {
  return (
    <dl className="approval-summary" data-summary={source}>
      {items.map((it, i) => (
        <div key={i} data-summary-item={it.label}>
          <dt title={it.path}>{it.label}</dt>
          <dd>{summaryText(it.value)}</dd>
        </div>
      ))}
    </dl>
  );
}

// fieldLabel makes a field's name a label: "cost_center" → "Cost center",
// "requestedBy" → "Requested by".
export function fieldLabel(name: string): string {
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/[_\-.]+/g, " ")
    .trim()
    .toLowerCase();
  return words ? words[0].toUpperCase() + words.slice(1) : name;
}

// labelledValues lays a run's input out as labelled values: its fields,
// those of nested objects (one level) under "Parent › child"; a list or
// deeper object as compact JSON. Not an object: one value, "Input".
export function labelledValues(input: unknown, max = 12): { label: string; path: string; value: unknown }[] {
  if (input === null || input === undefined) return [];
  if (typeof input !== "object" || Array.isArray(input)) return [{ label: "Input", path: "", value: input }];
  const out: { label: string; path: string; value: unknown }[] = [];
  for (const [k, v] of Object.entries(input as Record<string, unknown>)) {
    if (v && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length <= 6) {
      for (const [k2, v2] of Object.entries(v as Record<string, unknown>)) out.push({ label: `${fieldLabel(k)} › ${fieldLabel(k2)}`, path: `${k}.${k2}`, value: v2 });
    } else out.push({ label: fieldLabel(k), path: k, value: v });
    if (out.length >= max) break;
  }
  return out.slice(0, max);
}

// runTail is the part of a run id people tell runs apart by: a UUIDv7
// begins with the time it was made, alike for runs started together, so
// its tail.
export function runTail(id: string): string {
  return id.length > 8 ? `…${id.slice(-8)}` : id;
}

// Age is how long a step has waited, counting up live.
export function Age({ since, prefix = "waiting" }: { since: string; prefix?: string }) {
  const now = useNow(1000);
  const t = new Date(since).getTime();
  return (
    <span className="muted age" title={new Date(since).toLocaleString()} data-age={since}>
      {prefix ? `${prefix} ` : ""}
      {isNaN(t) ? "—" : span(now - t)}
    </span>
  );
}

// EscalationInfo says where a step's escalation stands: "escalated to
// finance-leads after 1 h", and when the next step falls due.
function EscalationInfo({ e }: { e: Escalation }) {
  return (
    <span className="escalation" data-escalation={e.step}>
      {e.step > 0 && e.escalated_to && (
        <span data-escalated>
          ⤴ escalated to {whomText(e.escalated_to)} after {after(e.escalated_after_seconds ?? 0)}
        </span>
      )}
      {e.next_at && e.next_to && (
        <>
          {e.step > 0 ? " · " : ""}
          <Countdown at={e.next_at} before={`escalates to ${whomText(e.next_to)} in`} due={`escalating to ${whomText(e.next_to)}…`} className="next-escalation" />
        </>
      )}
    </span>
  );
}

// TaskActions: claim, unclaim and reassign a waiting step, for those who
// may (the server checks anyway): a decider claims an unclaimed step; its
// claimer, an operator or an admin unclaims and reassigns it.
function TaskActions({ a, me, onDone }: { a: Approval; me: Me | null; onDone: (refused?: string) => void }) {
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [reassigning, setReassigning] = useState(false);
  const [users, setUsers] = useState("");
  const [groups, setGroups] = useState("");
  const [comment, setComment] = useState("");
  const mine = !!a.claimed_by && !!me?.email && a.claimed_by.toLowerCase() === me.email.toLowerCase();
  const manager = me?.role === "admin" || me?.role === "operator";
  const path = `/runs/${a.run_id}/nodes/${encodeURIComponent(a.key)}`;
  async function act(what: string, body: unknown = {}) {
    setBusy(what);
    setError(null);
    try {
      await api("POST", `${path}/${what}`, body);
      if (what === "reassign") setReassigning(false);
      onDone();
    } catch (err) {
      const refused = `${what[0].toUpperCase() + what.slice(1)} of ${a.key} refused: ${describe(err)}`;
      setError(refused);
      if (err instanceof ApiError && (err.status === 409 || err.status === 404)) onDone(refused);
    } finally {
      setBusy(null);
    }
  }
  const split = (t: string) =>
    t
      .split(/[\s,]+/)
      .map((x) => x.trim())
      .filter(Boolean);
  const canClaim = !a.claimed_by && can(me, "decide") && !me?.bootstrap;
  const canRelease = !!a.claimed_by && (mine || manager);
  const canReassign = mine || manager;
  if (!canClaim && !canRelease && !canReassign) return null;
  return (
    <div className="task-actions" data-task-actions>
      {canClaim && (
        <button type="button" className="btn small" data-action="claim" disabled={busy !== null} onClick={() => void act("claim")} title="Take this task: while it is yours, only you decide it">
          {busy === "claim" ? "Claiming…" : "Claim"}
        </button>
      )}
      {canRelease && (
        <button type="button" className="btn small" data-action="unclaim" disabled={busy !== null} onClick={() => void act("unclaim")} title="Give the task back to everyone it is assigned to">
          {busy === "unclaim" ? "Releasing…" : "Unclaim"}
        </button>
      )}
      {canReassign && (
        <button type="button" className="btn small ghost" data-action="reassign" aria-expanded={reassigning} onClick={() => setReassigning((r) => !r)}>
          Reassign…
        </button>
      )}
      {reassigning && (
        <form
          className="reassign"
          aria-label="Reassign"
          onSubmit={(e: FormEvent) => {
            e.preventDefault();
            void act("reassign", { users: split(users), groups: split(groups), comment: comment.trim() });
          }}
        >
          <label htmlFor={`re-users-${a.run_id}-${a.key}`}>People (emails)</label>
          <input id={`re-users-${a.run_id}-${a.key}`} data-field="users" value={users} onChange={(e) => setUsers(e.target.value)} placeholder="bob@example.com" />
          <label htmlFor={`re-groups-${a.run_id}-${a.key}`}>Groups</label>
          <input id={`re-groups-${a.run_id}-${a.key}`} data-field="groups" value={groups} onChange={(e) => setGroups(e.target.value)} placeholder="finance-leads" />
          <label htmlFor={`re-comment-${a.run_id}-${a.key}`}>Why (optional)</label>
          <input id={`re-comment-${a.run_id}-${a.key}`} data-field="comment" value={comment} onChange={(e) => setComment(e.target.value)} />
          <button type="submit" className="btn small primary" disabled={busy !== null || (!split(users).length && !split(groups).length)}>
            {busy === "reassign" ? "Reassigning…" : "Reassign"}
          </button>
        </form>
      )}
      {error && (
        <p className="field-error" role="alert" data-task-error>
          {error}
        </p>
      )}
    </div>
  );
}

export function ApprovalCard({ a, me, onDone, page = false }: { a: Approval; me: Me | null; onDone: (refused?: string) => void; page?: boolean }) {
  const need = a.required_approvals ?? 1;
  const votes = a.votes ?? [];
  const mine = votes.find((v) => me?.email && v.by.toLowerCase() === me.email.toLowerCase());
  const hasInput = a.input !== null && a.input !== undefined;
  const claimedByMe = !!a.claimed_by && !!me?.email && a.claimed_by.toLowerCase() === me.email.toLowerCase();
  const delegatedToMe = !!a.delegate && !!me?.email && a.delegate.toLowerCase() === me.email.toLowerCase();
  // Claimed by another: only they (their delegate, an admin) decide.
  const held = !!a.claimed_by && !claimedByMe && !delegatedToMe && me?.role !== "admin";
  const summary = a.summary && a.summary.length > 0 ? a.summary : null;
  const fromRun = summary ? [] : labelledValues(a.run_input);
  const taskPath = `/approvals/${a.run_id}/${encodeURIComponent(a.key)}`;
  return (
    <li className={`card approval ${a.claimed_by ? "claimed" : ""}`} data-approval={`${a.run_id}/${a.key}`} data-claimed-by={a.claimed_by ?? undefined}>
      <div className="approval-head">
        {/* The entity decided about is the card's title; the step names it. */}
        <h2 data-approval-title>
          {a.entity ? (
            <>
              {a.entity.name || a.entity.type || a.entity.id.slice(0, 8)} <span className="approval-step">· {a.label || a.node_id}</span>
            </>
          ) : (
            a.label || a.node_id
          )}
        </h2>
        <span className="approval-times">
          <Age since={a.waiting_since} />
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
          {(a.remind_after_seconds ?? 0) > 0 && (
            <>
              {" · "}
              <span className="remind" data-remind={a.remind_after_seconds} title="A reminder (approval.reminder) goes to the notification webhook at each interval while nobody answers">
                🔔 reminded every {span((a.remind_after_seconds ?? 0) * 1000)}
              </span>
            </>
          )}
          {a.escalation && (
            <>
              {" · "}
              <EscalationInfo e={a.escalation} />
            </>
          )}
        </span>
      </div>
      {a.prompt && <p className="prompt">{a.prompt}</p>}
      <p className="muted small approval-meta">
        {a.flow_name ? <span data-flow-name>{a.flow_name} · </span> : null}
        {page ? (
          <span className="mono" title={a.run_id} data-run-tail>
            run {runTail(a.run_id)}
          </span>
        ) : (
          <Link to={taskPath} title={`Run ${a.run_id}: open the task`} data-task-link>
            <span className="mono" data-run-tail>
              run {runTail(a.run_id)}
            </span>
          </Link>
        )}
        {a.entity && (
          <>
            {" "}
            · for{" "}
            <span data-entity={a.entity.id}>
              {can(me, "read") ? (
                <Link to={`/boards/${a.entity.board_id}?entity=${a.entity.id}`}>
                  <strong data-entity-name>{a.entity.name || a.entity.id.slice(0, 8)}</strong>
                </Link>
              ) : (
                <strong data-entity-name>{a.entity.name || a.entity.id.slice(0, 8)}</strong>
              )}{" "}
              <span data-entity-type>({a.entity.type}</span>
              {a.entity.section ? (
                <span data-entity-section>
                  {" "}
                  · in {a.entity.section}
                </span>
              ) : null}
              )
            </span>
          </>
        )}
        {" · "}
        <span className="assignees" data-assignees>
          assigned to {assignedTo(a)}
        </span>
      </p>
      <div className="claim-line">
        {a.claimed_by ? (
          <span className="claim-chip" data-claimed={a.claimed_by}>
            {claimedByMe ? "Claimed by you" : `Claimed by ${a.claimed_by}`}
            {a.claimed_at ? <Age since={a.claimed_at} prefix=" ·" /> : null}
            {a.delegate ? <span data-delegate={a.delegate}> · {delegatedToMe ? "you decide" : `${a.delegate} decides`} on their behalf</span> : null}
          </span>
        ) : (
          <span className="muted small" data-unclaimed>
            Not claimed
          </span>
        )}
        <TaskActions a={a} me={me} onDone={onDone} />
      </div>
      {summary ? <Summary items={summary} /> : fromRun.length > 0 ? <Summary items={fromRun} source="run-input" /> : null}
      {need > 1 && <VoteTally need={need} votes={votes} />}
      <div className={`approval-body ${a.form ? "with-form" : ""}`}>
        <div className="approval-context">
          {a.entity && (
            <>
              <h3>Entity</h3>
              <dl className="entity-facts">
                <dt>Name</dt>
                <dd>{a.entity.name || "—"}</dd>
                <dt>Type</dt>
                <dd>{a.entity.type}</dd>
                {a.entity.section && (
                  <>
                    <dt>Section</dt>
                    <dd>{a.entity.section}</dd>
                  </>
                )}
                {a.entity.email && (
                  <>
                    <dt>Email</dt>
                    <dd>{a.entity.email}</dd>
                  </>
                )}
              </dl>
            </>
          )}
          {hasInput && (
            <details className="step-input">
              <summary>What reached this step</summary>
              <Summary items={labelledValues(a.input, 40)} source="step-input" />
              <details className="as-json">
                <summary>As JSON</summary>
                <Json value={a.input} label="input" />
              </details>
            </details>
          )}
        </div>
        <div className="approval-decide">
          {mine ? (
            <p className="banner ok" data-voted={mine.outcome}>
              You chose “{mine.outcome}”{need > 1 ? ` · waiting for ${Math.max(0, need - votes.filter((v) => v.outcome === mine.outcome).length)} more` : ""}.
            </p>
          ) : held && can(me, "decide") ? (
            <p className="banner subtle" data-held-by={a.claimed_by}>
              {a.claimed_by} is on it: only they decide it while it is claimed.
            </p>
          ) : can(me, "decide") ? (
            <Answer
              runId={a.run_id}
              nodeKey={a.key}
              outcomes={outcomesOf({ outcomes: a.outcomes })}
              form={a.form ?? null}
              formOutcomes={a.form_outcomes ?? null}
              formComment={!!a.form_comment}
              onDone={onDone}
            />
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

// Refused is what a person's last action on a task that moved on came to
// (a decision someone else made first): its card is gone with the reload,
// so the page keeps the server's words until dismissed.
export function Refused({ message, onDismiss }: { message: string | null; onDismiss: () => void }) {
  if (!message) return null;
  return (
    <div className="banner error" role="alert" data-refused>
      <span>{message}</span>{" "}
      <button type="button" className="btn small ghost" data-action="dismiss-refused" onClick={onDismiss}>
        Dismiss
      </button>
    </div>
  );
}
