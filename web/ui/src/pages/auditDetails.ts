// auditDetails says an audit entry's details (docs/people.md: the node
// key, the token used, the fields a user change touched, a reassignment's
// people, …) as labelled lines a person reads, not as JSON.

export type DetailLine = { label: string; value: string };

// Labels of the keys the server writes; any other key is said from its
// name ("after_seconds" → "After seconds").
const LABELS: Record<string, string> = {
  token_id: "Token",
  key: "Step",
  changed: "Changed",
  cancelled_runs: "Runs cancelled",
  users: "People",
  groups: "Groups",
  comment: "Comment",
  to: "To",
  member: "Member",
  role: "Role",
  section_id: "Section",
  move_to: "Entities moved to",
  via: "Signed in with",
  address: "From address",
  outcome: "Outcome",
  after_seconds: "After",
};

// How a sign-in or decision came (details.via).
const VIA: Record<string, string> = { oidc: "single sign-on", link: "a link in a message" };

// Keys said before the others, in this order; the rest alphabetically.
const ORDER = ["key", "outcome", "member", "role", "to", "users", "groups", "comment", "changed", "via", "address", "token_id"];

export function auditDetails(details: Record<string, unknown> | null | undefined): DetailLine[] {
  if (!details || typeof details !== "object") return [];
  const keys = Object.keys(details).sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  const out: DetailLine[] = [];
  for (const k of keys) {
    const v = details[k];
    if (v === undefined || v === null || v === "" || (Array.isArray(v) && v.length === 0)) continue;
    const label = LABELS[k] ?? humanize(k);
    let value: string;
    if (k === "changed" && isObject(v)) value = Object.keys(v).map(humanize).map(lower).join(", ");
    else if (k === "via" && typeof v === "string") value = VIA[v] ?? v;
    else if (k === "after_seconds" && typeof v === "number") value = seconds(v);
    else value = say(v);
    if (value) out.push({ label, value });
  }
  return out;
}

function rank(k: string): number {
  const i = ORDER.indexOf(k);
  return i < 0 ? ORDER.length : i;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === "object" && !Array.isArray(v);
}

// humanize turns a key ("cancelled_runs", "sectionId") into words.
function humanize(k: string): string {
  const w = k
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/[_-]+/g, " ")
    .trim()
    .toLowerCase();
  return w ? w[0].toUpperCase() + w.slice(1) : k;
}

function lower(s: string): string {
  return s ? s[0].toLowerCase() + s.slice(1) : s;
}

function seconds(n: number): string {
  if (n % 3600 === 0 && n >= 3600) return `${n / 3600} h`;
  if (n % 60 === 0 && n >= 60) return `${n / 60} min`;
  return `${n} s`;
}

// say writes any JSON value in words: a list joined with commas, an object
// as "name: value" pairs, true and false as yes and no.
function say(v: unknown): string {
  if (v === null || v === undefined) return "";
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (typeof v === "string" || typeof v === "number") return String(v);
  if (Array.isArray(v)) return v.map(say).filter(Boolean).join(", ");
  if (isObject(v))
    return Object.entries(v)
      .map(([k, x]) => [lower(humanize(k)), say(x)])
      .filter(([, x]) => x)
      .map(([k, x]) => `${k}: ${x}`)
      .join("; ");
  return String(v);
}
