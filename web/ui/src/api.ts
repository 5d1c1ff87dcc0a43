// The API client. Two ways to be signed in: a session (the HttpOnly
// cookie stitchd_session, set by POST /auth/login; every write carries the
// session's CSRF token in X-CSRF-Token) or an API token kept in
// localStorage — so that it holds across tabs until sign-out, which
// forgets it — and sent as a Bearer header (never in a URL). Errors
// arrive in the contract's shape.

import type { components, operations } from "./api.gen";

const TOKEN_KEY = "stitchd.token";

export function getToken(): string | null {
  try {
    return localStorage.getItem(TOKEN_KEY);
  } catch {
    return null; // storage refused (a locked-down browser): sign in again
  }
}

export function setToken(token: string | null) {
  try {
    if (token) localStorage.setItem(TOKEN_KEY, token);
    else localStorage.removeItem(TOKEN_KEY);
  } catch {
    /* storage refused */
  }
  // A token kept by an older version in the tab's session storage.
  sessionStorage.removeItem(TOKEN_KEY);
  window.dispatchEvent(new Event("stitchd:auth"));
}

// The workspace the UI acts in (docs/workspaces.md), kept per browser; sent
// as the Stitchd-Workspace header on every call. "default" is sent as no
// header, as a server with one workspace always was.
const WORKSPACE_KEY = "stitchd.workspace";

export function getWorkspace(): string {
  try {
    return localStorage.getItem(WORKSPACE_KEY) || "default";
  } catch {
    return "default";
  }
}

// setWorkspace switches workspace and reads the caller again (their role
// is the workspace's); the app then shows its pages afresh.
export async function setWorkspace(slug: string) {
  try {
    if (slug === "default") localStorage.removeItem(WORKSPACE_KEY);
    else localStorage.setItem(WORKSPACE_KEY, slug);
  } catch {
    /* storage refused */
  }
  await restore();
}

function workspaceHeader(headers: Record<string, string>) {
  const ws = getWorkspace();
  if (ws !== "default") headers["Stitchd-Workspace"] = ws;
}

// The contract's types, generated from openapi.yaml (npm run gen-api;
// make test checks api.gen.ts is what the spec gives).
type Schemas = components["schemas"];
// Answer is the JSON an operation answers 200 (or 201) with.
type Answer<Op extends keyof operations> = operations[Op]["responses"] extends { 200: { content: { "application/json": infer T } } }
  ? T
  : operations[Op]["responses"] extends { 201: { content: { "application/json": infer T } } }
    ? T
    : never;
// Either is A or B, each with the other's own fields as absent, so that
// any field of either may be read.
type Either<A, B> = (A & { [K in Exclude<keyof B, keyof A>]?: undefined }) | (B & { [K in Exclude<keyof A, keyof B>]?: undefined });

export type Workspace = Schemas["Workspace"];
export type WorkspaceMember = Schemas["WorkspaceMember"];

// Another tab signing in or out with a token: this one follows.
if (typeof window !== "undefined") {
  window.addEventListener("storage", (e) => {
    if (e.key === TOKEN_KEY) void restore();
  });
}

export type Role = Schemas["User"]["role"];
export const ROLES: Role[] = ["admin", "editor", "operator", "approver", "viewer"];

// Me is the signed-in caller (GET /api/v1/me): a user, whose role is
// theirs in the workspace the request acts in ("": no member of it), or
// the admin token ({role: "admin", bootstrap: true}); either's fields
// read, absent on the other.
type MeAnswer = Answer<"getMe">;
export type Me = Either<Extract<MeAnswer, { bootstrap: true }>, Exclude<MeAnswer, { bootstrap: true }>>;

// The signed-in caller and the session's CSRF token, kept in memory only:
// a reloaded page reads both again from GET /me.
let me: Me | null = null;
let csrf: string | null = null;
let known = false;

function authChanged() {
  window.dispatchEvent(new Event("stitchd:auth"));
}

// currentMe is the signed-in caller; known is false until the page has
// asked the server (restore).
export function currentMe(): { me: Me | null; known: boolean } {
  return { me, known };
}

// signedIn records a caller: after a sign-in with a password (csrf from
// the answer) or with a token (no csrf: the Bearer header needs none).
export function signedIn(m: Me, csrfToken: string | null) {
  me = m;
  csrf = csrfToken;
  known = true;
  authChanged();
}

// signedOut forgets the caller (and the token, if there was one).
export function signedOut() {
  me = null;
  csrf = null;
  known = true;
  if (getToken()) {
    try {
      localStorage.removeItem(TOKEN_KEY);
    } catch {
      /* storage refused */
    }
  }
  authChanged();
}

// restore finds out who is signed in when the page loads: the token in
// localStorage, else the session cookie.
export async function restore() {
  try {
    const m = await api<Me>("GET", "/me", undefined, getToken(), { quiet: true });
    if (!m.role && !m.bootstrap) {
      // No member of the workspace this browser last used (or of the
      // default one): the first they belong to, if any.
      const ws = await api<{ workspaces: Workspace[] }>("GET", "/workspaces", undefined, getToken(), { quiet: true });
      const first = ws.workspaces[0]?.slug;
      if (first && first !== getWorkspace()) {
        await setWorkspace(first);
        return;
      }
    }
    signedIn(m, m.csrf_token ?? null);
  } catch (err) {
    if (err instanceof ApiError && (err.status === 401 || err.status === 403)) signedOut();
    else {
      // The server is unreachable: show sign-in, which says so on submit.
      me = null;
      known = true;
      authChanged();
    }
  }
}

// signOut ends the session on the server (a token needs nothing: it is
// forgotten here and stays valid until revoked).
export async function signOut() {
  if (!getToken() && me && !me.bootstrap) {
    try {
      await api("POST", "/auth/logout", undefined, null, { quiet: true });
    } catch {
      /* the session may be gone already */
    }
  }
  signedOut();
}

// can says whether the caller's role may do something (docs/people.md);
// the server checks every call anyway.
export type Ability = "read" | "edit" | "operate" | "decide" | "board" | "admin";
export function can(m: Me | null, what: Ability): boolean {
  const r = m?.role;
  if (!r) return false;
  if (r === "admin") return true;
  switch (what) {
    case "read":
      return r !== "approver";
    case "edit":
      return r === "editor";
    case "operate":
      return r === "operator";
    case "decide":
      return r === "approver";
    case "board":
      return r === "editor" || r === "operator";
    case "admin":
      return false;
  }
}

export type Problem = Schemas["Problem"];

export class ApiError extends Error {
  status: number;
  code: string;
  details: Problem[];
  // info: details that are an object rather than a list of problems
  // (a refused migration's {"missing_nodes": [...]}).
  info: Record<string, any>;
  // retryAfter: the seconds a 429 says to wait (0 when not given).
  retryAfter = 0;
  constructor(status: number, code: string, message: string, details: unknown = []) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = Array.isArray(details) ? (details as Problem[]) : [];
    this.info = details && typeof details === "object" && !Array.isArray(details) ? (details as Record<string, any>) : {};
  }
}

// describe turns any failure into a sentence a person understands.
export function describe(err: unknown): string {
  if (err instanceof ApiError) {
    switch (err.code) {
      case "unauthorized":
        return "Your session has expired or the token is wrong. Sign in again.";
      case "forbidden": {
        // The server's route refusal names a method and a route pattern
        // ("role viewer may not DELETE /api/v1/triggers/:id"): said in words.
        const m = /^role (\S*) may not [A-Z]+ \/\S*$/.exec(err.message);
        if (m) return `Your role${m[1] ? ` (${m[1]})` : ""} may not do that here.`;
        return err.message || "Your role may not do that.";
      }
      case "account_disabled":
        return "This account is disabled. Ask an admin to enable it.";
      case "csrf":
        return "This page's session token is stale. Reload the page and try again.";
      case "rate_limited":
        return `Too many attempts. Try again${err.retryAfter ? ` in ${Math.ceil(err.retryAfter / 60)} min` : " later"}.`;
      case "unavailable":
        // The database, or a feature the server is not set up for (its
        // message says which setting: "secrets are off on this server: …").
        if (err.message && !/database/i.test(err.message) && err.message !== "Service Unavailable")
          return err.message[0].toUpperCase() + err.message.slice(1) + (/[.!?]$/.test(err.message) ? "" : ".");
        return "stitchd cannot reach its database right now. Try again in a moment.";
      case "not_found":
        return err.message || "Not found.";
      default:
        return err.message || `Request failed (${err.status}).`;
    }
  }
  if (err instanceof TypeError) return "Cannot reach the stitchd server. Is it running?";
  if (err instanceof Error) return err.message;
  return String(err);
}

// The server's clock, as far as its Date header (whole seconds) tells:
// due times (a Wait's wake_at, an approval's deadline) are server time,
// so a countdown on a computer whose clock is off would be off too. An
// offset under 2 s is within the header's precision and ignored.
let clockOffset = 0;

function noteServerTime(res: Response) {
  const d = Date.parse(res.headers.get("Date") ?? "");
  if (isNaN(d)) return;
  const off = d + 500 - Date.now();
  clockOffset = Math.abs(off) > 2000 ? off : 0;
}

// serverNow is the current time on the server's clock.
export function serverNow(): number {
  return Date.now() + clockOffset;
}

export async function api<T>(method: string, path: string, body?: unknown, token = getToken(), opts: { quiet?: boolean } = {}): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json" };
  if (token) headers.Authorization = `Bearer ${token}`;
  else if (csrf && method !== "GET" && method !== "HEAD") headers["X-CSRF-Token"] = csrf;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  workspaceHeader(headers);
  const res = await fetch(`/api/v1${path}`, {
    method,
    headers,
    credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  noteServerTime(res);
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  let data: any = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!res.ok) {
    const e = data?.error;
    const err = new ApiError(res.status, e?.code ?? "internal", e?.message ?? res.statusText, e?.details ?? []);
    err.retryAfter = Number(res.headers.get("Retry-After")) || 0;
    // An expired session or a revoked token: back to sign-in.
    if (res.status === 401 && !opts.quiet && token === getToken()) signedOut();
    throw err;
  }
  return data as T;
}

// listAll reads every page of a list (GET path → {[field]: T[],
// next_cursor}), following next_cursor until the last page.
export async function listAll<T>(path: string, field: string, maxPages = 50): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < maxPages; i++) {
    const sep = path.includes("?") ? "&" : "?";
    const page: Record<string, any> = await api<Record<string, any>>("GET", cursor ? `${path}${sep}cursor=${encodeURIComponent(cursor)}` : path);
    out.push(...((page?.[field] ?? []) as T[]));
    cursor = typeof page?.next_cursor === "string" && page.next_cursor ? page.next_cursor : null;
    if (!cursor) break;
  }
  return out;
}

// StreamEvent is one event of a run's stream (and of a task's history).
// Its payload's shape depends on its type, which the contract leaves
// open: it is read loosely.
export type StreamEvent = Omit<Schemas["Event"], "payload"> & { payload: any };

// stream reads a server-sent event stream with fetch (EventSource cannot
// send an Authorization header) and reconnects with Last-Event-ID.
// A stream answered 404 or 403 is given up (onState(false) stays) when
// stopOn lists the status: the caller falls back to polling.
export function stream(path: string, onEvent: (e: StreamEvent) => void, onState?: (live: boolean) => void, stopOn: number[] = []): () => void {
  let ctrl = new AbortController();
  let lastId = "";
  let stopped = false;
  // gen is the reading loop that may go on: leaving the page ends it (a
  // stream left open as the page goes keeps its connection, and a browser
  // has six per server: a few page loads later, nothing loads), and coming
  // back to the page from the back-forward cache starts another.
  let gen = 0;
  const run = async (g: number) => {
    let delay = 500;
    while (!stopped && g === gen) {
      try {
        const headers: Record<string, string> = { Accept: "text/event-stream" };
        const token = getToken();
        if (token) headers.Authorization = `Bearer ${token}`;
        if (lastId) headers["Last-Event-ID"] = lastId;
        workspaceHeader(headers);
        const res = await fetch(`/api/v1${path}`, { headers, signal: ctrl.signal, credentials: "same-origin" });
        if (res.status === 401) {
          if (token === getToken()) signedOut();
          return;
        }
        if (stopOn.includes(res.status)) {
          onState?.(false);
          return;
        }
        if (!res.ok || !res.body) throw new Error(`stream answered ${res.status}`);
        onState?.(true);
        delay = 500;
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let idx: number;
          while ((idx = buf.indexOf("\n\n")) >= 0) {
            const block = buf.slice(0, idx);
            buf = buf.slice(idx + 2);
            let id = "";
            let data = "";
            for (const line of block.split("\n")) {
              if (line.startsWith("id: ")) id = line.slice(4);
              else if (line.startsWith("data: ")) data += line.slice(6);
            }
            if (!data) continue;
            if (id) lastId = id;
            try {
              onEvent(JSON.parse(data));
            } catch {
              /* a malformed event is skipped */
            }
          }
        }
      } catch {
        if (stopped || g !== gen) return;
      }
      onState?.(false);
      if (stopped || g !== gen) return;
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 10000);
    }
  };
  const hide = () => {
    gen++;
    ctrl.abort();
  };
  const show = (e: PageTransitionEvent) => {
    if (!e.persisted || stopped) return;
    ctrl = new AbortController();
    void run(++gen);
  };
  window.addEventListener("pagehide", hide);
  window.addEventListener("pageshow", show);
  void run(gen);
  return () => {
    stopped = true;
    ctrl.abort();
    window.removeEventListener("pagehide", hide);
    window.removeEventListener("pageshow", show);
  };
}

// Types of the public contract: every one is the generated type of
// openapi.yaml (api.gen.ts), named or read off an operation's answer, so
// the UI cannot drift from the spec.
export type FlowGraph = Schemas["Graph"];
export type GraphNode = Schemas["GraphNode"];
export type GraphEdge = Schemas["GraphEdge"];
// Flow: as one flow is read, or as the list shows it (with run_counts,
// run_counts_capped and triggers by kind).
export type Flow = Schemas["FlowListed"];
export type TriggerKind = keyof NonNullable<Flow["triggers"]>;
export type Version = Schemas["Version"];
export type NodeStatus = Schemas["NodeState"]["status"];
export type NodeState = Schemas["NodeState"];
// queued: started for an entity whose run of the flow still goes; it
// waits its turn (settings.entityConcurrency "queue").
export type RunStatus = Schemas["Run"]["status"];
export type Run = Schemas["Run"];
export type Compensation = Schemas["Compensation"];
export type Approval = Schemas["Approval"];
export type ApprovalsPage = Answer<"listApprovals">;
export type Escalation = NonNullable<Approval["escalation"]>;
export type Assignees = Schemas["EscalationAssignees"];
export type Vote = Schemas["Vote"];
export type User = Schemas["User"];
export type ApiToken = Schemas["APIToken"];
export type AuditEntry = Schemas["AuditEntry"];
export type AuditPage = Answer<"listAudit">;
export type Entity = Schemas["Entity"];
export type JourneyEvent = Schemas["JourneyEvent"];
// Task is a task page (GET /runs/{id}/nodes/{key}/task).
export type Task = Answer<"getTask">;
export type Board = Schemas["Board"];
export type Section = Board["sections"][number];
export type WebhookTrigger = Schemas["WebhookTrigger"];
// A webhook trigger's secret rotation (POST /triggers/{id}/rotate-secret):
// the new secret, shown this once, and when the one it replaced stops
// being accepted.
export type RotatedTriggerSecret = Answer<"rotateTriggerSecret">;
export type ScheduleTrigger = Schemas["ScheduleTrigger"];
export type EventTrigger = Schemas["EventTrigger"];
// A broker trigger: a NATS JetStream subject or a RabbitMQ queue consumed
// by every stitchd process (docs/triggers.md).
export type BrokerTrigger = Schemas["BrokerTrigger"];
export type BrokerConsumer = BrokerTrigger["consumers"][number];
export type Trigger = Schemas["Trigger"];
export type NodeType = Schemas["NodeType"];
export type Credential = Schemas["Credential"];
export type Secret = Schemas["Secret"];
// Queue is a pull queue as GET /queues lists it.
export type Queue = Answer<"listQueues">[number];
// BoardListed is a board as GET /boards lists it (its sections' ids and names).
export type BoardListed = Answer<"listBoards">["boards"][number];
export type BulkRunsAnswer = Answer<"bulkRuns">;
// NodeTestAnswer: what POST /flows/{id}/nodes/{key}/test gives.
export type NodeTestAnswer = Answer<"testFlowNode">;
// Percentiles of a duration (analytics).
export type Percentiles = Schemas["Percentiles"];
// GET /boards/{id}/analytics.
export type BoardAnalytics = Answer<"getBoardAnalytics">;
// GET /flows/{id}/analytics.
export type FlowAnalytics = Answer<"getFlowAnalytics">;

// download fetches an API answer (with the caller's credential) and saves
// it as a file: a CSV export.
export async function download(path: string, name: string): Promise<void> {
  const headers: Record<string, string> = { Accept: "text/csv" };
  const token = getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  workspaceHeader(headers);
  const res = await fetch(`/api/v1${path}`, { headers, credentials: "same-origin" });
  noteServerTime(res);
  if (!res.ok) {
    // The server's refusal is JSON, as any other answer's: its reason is
    // said in words ("This account is disabled", "Your session has
    // expired"), not as a status code.
    let e: any;
    try {
      e = JSON.parse(await res.text())?.error;
    } catch {
      e = undefined;
    }
    const err = new ApiError(res.status, e?.code ?? "download_failed", e?.message ?? `The export failed (${res.status} ${res.statusText}).`, e?.details ?? []);
    err.retryAfter = Number(res.headers.get("Retry-After")) || 0;
    if (res.status === 401 && token === getToken()) signedOut();
    throw err;
  }
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
