// The inbox's filters: a search, a flow, a group, mine only, overdue only.
import type { Approval, Me } from "../../api";
import { summaryText } from "./ApprovalCard";

export type Filters = { q: string; flow: string; group: string; mine: boolean; overdue: boolean };
export const NO_FILTERS: Filters = { q: "", flow: "", group: "", mine: false, overdue: false };

export function filtersOn(f: Filters): boolean {
  return !!(f.q.trim() || f.flow || f.group || f.mine || f.overdue);
}

// overdue: past its deadline, or escalated (its first escalation fell
// due), or past when its next escalation falls due.
export function isOverdue(a: Approval, now: number): boolean {
  if (a.deadline && new Date(a.deadline).getTime() <= now) return true;
  if (a.escalation && a.escalation.step > 0) return true;
  return !!a.escalation?.next_at && new Date(a.escalation.next_at).getTime() <= now;
}

export function matches(a: Approval, f: Filters, me: Me | null, now: number): boolean {
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

export function InboxFilters(props: { filters: Filters; onChange: (f: Filters) => void; flows: [string, string][]; groups: string[]; me: Me | null }) {
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
