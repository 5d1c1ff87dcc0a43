import { useEffect, useMemo, useRef, useState, type FormEvent } from "react";
import { api, ApiError, can, currentMe, describe, stream, type Approval, type ApprovalsPage, type Escalation, type Me, type Problem, type Run, type Vote } from "../api";
import { ago, Countdown, Empty, ErrorBox, Json, span, Spinner, useNow, useThrottled } from "../components/common";
import { after, assigneesText, whomText } from "../components/taskwords";
import { TaskForm, type TaskFormHandle } from "../components/LazyTaskForm";
import { outcomesOf } from "../graph";
import { Link, navigate } from "../router";

type Tab = "me" | "groups" | "all";
const TAB_LABEL: Record<Tab, string> = { me: "Assigned to me", groups: "My groups", all: "All" };
type Page = ApprovalsPage;

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
  const all = page ? [...page.approvals, ...(extra?.approvals ?? [])] : [];
  // Search and filters, over what the tab lists.
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  const now = useNow(15000);
  const approvals = all.filter((a) => matches(a, filters, me, now));
  const filtered = filtersOn(filters);
  const flows = [...new Map(Object.values(pages).flatMap((p) => p?.approvals ?? []).map((a) => [a.flow_id, a.flow_name || a.flow_id.slice(0, 8)])).entries()].sort((x, y) =>
    x[1].localeCompare(y[1]),
  );
  const groups = [...new Set([...(me?.groups ?? []), ...Object.values(pages).flatMap((p) => (p?.approvals ?? []).flatMap((a) => a.assignees?.groups ?? []))])].sort();
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
      <InboxFilters filters={filters} onChange={setFilters} flows={flows} groups={groups} me={me} />
      <div id="inbox" role="tabpanel" aria-labelledby={`tab-${tab}`}>
        {page && all.length > 0 && approvals.length === 0 && filtered && (
          <Empty title="No approvals match these filters">
            <p>
              {all.length} {all.length === 1 ? "approval waits" : "approvals wait"} in this tab.{" "}
              <button type="button" className="btn small" data-action="clear-filters" onClick={() => setFilters(NO_FILTERS)}>
                Clear filters
              </button>
            </p>
          </Empty>
        )}
        {page && all.length === 0 && (
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

// Filters narrow the inbox: text (the title, step, flow, entity, summary,
// run id), a flow, a group it is assigned to, claimed by me, overdue.
type Filters = { q: string; flow: string; group: string; mine: boolean; overdue: boolean };
const NO_FILTERS: Filters = { q: "", flow: "", group: "", mine: false, overdue: false };

function filtersOn(f: Filters): boolean {
  return !!(f.q.trim() || f.flow || f.group || f.mine || f.overdue);
}

// overdue: past its deadline, or escalated (its first escalation fell
// due), or past when its next escalation falls due.
export function isOverdue(a: Approval, now: number): boolean {
  if (a.deadline && new Date(a.deadline).getTime() <= now) return true;
  if (a.escalation && a.escalation.step > 0) return true;
  return !!a.escalation?.next_at && new Date(a.escalation.next_at).getTime() <= now;
}

function matches(a: Approval, f: Filters, me: Me | null, now: number): boolean {
  if (f.flow && a.flow_id !== f.flow) return false;
  if (f.group && !(a.assignees?.groups ?? []).includes(f.group)) return false;
  if (f.mine && !(me?.email && a.claimed_by?.toLowerCase() === me.email.toLowerCase())) return false;
  if (f.overdue && !isOverdue(a, now)) return false;
  const q = f.q.trim().toLowerCase();
  if (!q) return true;
  const hay = [
    a.title,
    a.label,
    a.node_id,
    a.key,
    a.prompt,
    a.flow_name,
    a.run_id,
    a.entity?.name,
    a.entity?.email,
    a.entity?.type,
    a.entity?.section,
    a.claimed_by,
    ...(a.summary ?? []).map((s) => summaryText(s.value)),
    JSON.stringify(a.run_input ?? null),
  ];
  return hay.some((h) => typeof h === "string" && h.toLowerCase().includes(q));
}

function InboxFilters(props: { filters: Filters; onChange: (f: Filters) => void; flows: [string, string][]; groups: string[]; me: Me | null }) {
  const { filters: f, onChange, flows, groups, me } = props;
  const set = (p: Partial<Filters>) => onChange({ ...f, ...p });
  return (
    <div className="inbox-filters" role="search" aria-label="Search and filter approvals">
      <label htmlFor="inbox-search" className="sr-only">
        Search
      </label>
      <input id="inbox-search" type="search" placeholder="Search: requester, item, run…" value={f.q} onChange={(e) => set({ q: e.target.value })} />
      <label htmlFor="inbox-flow">Flow</label>
      <select id="inbox-flow" value={f.flow} onChange={(e) => set({ flow: e.target.value })}>
        <option value="">All flows</option>
        {flows.map(([id, name]) => (
          <option key={id} value={id}>
            {name}
          </option>
        ))}
      </select>
      <label htmlFor="inbox-group">Group</label>
      <select id="inbox-group" value={f.group} onChange={(e) => set({ group: e.target.value })}>
        <option value="">Any group</option>
        {groups.map((g) => (
          <option key={g} value={g}>
            {g}
          </option>
        ))}
      </select>
      {me?.email && (
        <label className="check">
          <input id="inbox-mine" type="checkbox" checked={f.mine} onChange={(e) => set({ mine: e.target.checked })} /> Claimed by me
        </label>
      )}
      <label className="check">
        <input id="inbox-overdue" type="checkbox" checked={f.overdue} onChange={(e) => set({ overdue: e.target.checked })} /> Overdue
      </label>
      {filtersOn(f) && (
        <button type="button" className="btn small ghost" onClick={() => onChange(NO_FILTERS)}>
          Clear
        </button>
      )}
    </div>
  );
}

// assignedTo says whom a step is assigned to, in words.
function assignedTo(a: Approval): string {
  return assigneesText(a.assignees);
}

// summaryText shows a summary value: text as it is, other JSON compactly.
export function summaryText(v: unknown): string {
  if (v === null || v === undefined) return "—";
  if (typeof v === "string") return v;
  return JSON.stringify(v);
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
function TaskActions({ a, me, onDone }: { a: Approval; me: Me | null; onDone: () => void }) {
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
      setError(`${what[0].toUpperCase() + what.slice(1)} refused: ${describe(err)}`);
      if (err instanceof ApiError && err.status === 409) onDone();
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

export function ApprovalCard({ a, me, onDone, page = false }: { a: Approval; me: Me | null; onDone: () => void; page?: boolean }) {
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
              <Json value={a.input} label="input" />
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
  formOutcomes = null,
  formComment = false,
  onDone,
}: {
  runId: string;
  nodeKey: string;
  outcomes: string[];
  form?: Record<string, any> | null;
  // formOutcomes: the outcomes the form applies to (default: all but reject).
  formOutcomes?: string[] | null;
  // formComment: the form has a comment field, the decision's comment.
  formComment?: boolean;
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

  async function choose(outcome: string, _index: number) {
    const body: Record<string, unknown> = { outcome };
    if (!formComment && comment.trim()) body.comment = comment.trim();
    setError(null);
    setNote(null);
    if (form) {
      // The outcomes the form applies to need it filled in (by default
      // all but reject); rejecting does not, and its comment — the form's
      // comment field when it has one — goes along all the same.
      const applies = (formOutcomes ?? outcomes.filter((o) => o !== "reject")).includes(outcome);
      if (applies && formRef.current && !formRef.current.check()) {
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
      {!formComment && (
        <>
          <label htmlFor={`comment-${id}`}>Comment (optional)</label>
          <textarea id={`comment-${id}`} className="comment" rows={2} value={comment} onChange={(e) => setComment(e.target.value)} />
        </>
      )}
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
