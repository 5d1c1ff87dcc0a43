// Task events and journey entries in business language (issue 45):
// "ann@example.com claimed it", "reassigned to group finance-leads by
// olga@example.com: on holiday", "escalated to finance-leads after 1 h".
import type { Assignees, StreamEvent } from "../api";

// assigneesText says whom a step is assigned to, in words.
export function assigneesText(a: Assignees | null | undefined): string {
  const users = a?.users ?? [];
  const groups = a?.groups ?? [];
  if (!a || (users.length === 0 && groups.length === 0)) return "anyone who may approve";
  const parts: string[] = [];
  if (users.length) parts.push(users.join(", "));
  if (groups.length) parts.push(`${groups.length === 1 ? "group" : "groups"} ${groups.join(", ")}`);
  return parts.join(" and ");
}

// whomText is assigneesText without the word "group": "finance-leads".
export function whomText(a: Assignees | null | undefined): string {
  const names = [...(a?.users ?? []), ...(a?.groups ?? [])];
  return names.length ? names.join(", ") : "anyone who may approve";
}

// after writes a wait as people say it: "30 s", "5 min", "1 h", "1.5 h", "2 d".
export function after(seconds: number): string {
  const s = Math.max(0, seconds);
  if (s < 60) return `${Math.round(s)} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  const round = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(1));
  if (s < 86400) return `${round(Math.round((s / 3600) * 10) / 10)} h`;
  return `${round(Math.round((s / 86400) * 10) / 10)} d`;
}

// taskEventText words a task's event ("" for an event that is not one of
// a task's).
export function taskEventText(e: StreamEvent): string {
  const p = e.payload ?? {};
  const by = typeof p.by === "string" ? p.by : "";
  const said = (c: unknown) => (typeof c === "string" && c.trim() ? `: “${c.trim()}”` : "");
  switch (e.type) {
    case "node.claimed":
      return `${by || "someone"} claimed it`;
    case "node.unclaimed":
      return p.claimed_by && p.claimed_by !== by ? `${by || "someone"} released ${p.claimed_by}'s claim` : `${by || "someone"} released it`;
    case "node.reassigned":
      return `${by || "someone"} reassigned it to ${assigneesText(p.assignees)}${said(p.comment)}`;
    case "node.delegated":
      return `${by || "someone"} let ${p.to ?? "someone"} decide on their behalf`;
    case "node.escalated":
      return `escalated to ${whomText(p.assignees)} after ${after(Number(p.after_seconds ?? 0))}`;
    case "approval.vote":
      return `${by || "someone"} voted “${p.outcome ?? "?"}”${p.for ? ` for ${p.for}` : ""} (${p.votes ?? "?"} of ${p.required ?? "?"})${said(p.comment)}`;
    case "approval.decided_for":
      return `${by || "someone"} chose “${p.outcome ?? "?"}” for ${p.for ?? "someone"}${said(p.comment)}`;
    case "approval.timed_out":
      return `nobody answered in time → ${p.on_timeout && p.on_timeout !== "fail" ? p.on_timeout : "fail"}`;
    case "node.reminder":
      return "a reminder went out";
    case "node.completed_by_hand":
      return `${by || "someone"} completed it by hand`;
    case "node.rerun":
      return `${by || "someone"} ran it again (attempt ${p.attempt ?? "?"})`;
    case "node.status":
      if (p.status === "waiting_for_user") return "began waiting for a person";
      if (p.status === "completed") return "decided";
      if (p.status === "failed") return `ended: ${p.error ?? "failed"}`;
      if (p.status === "cancelled") return "cancelled";
      return "";
  }
  return "";
}

// journeyKindText words a journey entry that moves nothing: a task
// reassigned, delegated or escalated ("" for other kinds).
export function journeyKindText(j: { kind: string; details?: { assignees?: Assignees; to?: string; after_seconds?: number } }): string {
  switch (j.kind) {
    case "reassigned":
      return `task reassigned to ${assigneesText(j.details?.assignees)}`;
    case "delegated":
      return `task delegated to ${j.details?.to ?? "someone"}`;
    case "escalated":
      return `task escalated to ${whomText(j.details?.assignees)}${j.details?.after_seconds ? ` after ${after(j.details.after_seconds)}` : ""}`;
  }
  return "";
}
