import { useEffect, useMemo, useRef, useState } from "react";
import { api, can, currentMe, stream, type Approval, type ApprovalsPage, type Me } from "../api";
import { Empty, ErrorBox, Spinner, useNow, useThrottled } from "../components/common";
import { navigate } from "../router";
import { ApprovalCard, Refused } from "./approvals/ApprovalCard";
import { filtersOn, InboxFilters, matches, NO_FILTERS, type Filters } from "./approvals/InboxFilters";

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
  // refused: a person's action on a task that had moved on, said until dismissed.
  const [refused, setRefused] = useState<string | null>(null);
  const done = (why?: string) => {
    setRefused(why ?? null);
    refresh();
  };
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
      <Refused message={refused} onDismiss={() => setRefused(null)} />
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
            <ApprovalCard key={`${a.run_id}/${a.key}`} a={a} me={me} onDone={done} />
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
