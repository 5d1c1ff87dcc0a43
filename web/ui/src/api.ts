// The API client. Two ways to be signed in: a session (the HttpOnly
// cookie stitchd_session, set by POST /auth/login; every write carries the
// session's CSRF token in X-CSRF-Token) or an API token kept in
// localStorage — so that it holds across tabs until sign-out, which
// forgets it — and sent as a Bearer header (never in a URL). Errors
// arrive in the contract's shape.

import type { components } from "./api.gen";

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

export type Workspace = Schemas["Workspace"];
export type WorkspaceMember = Schemas["WorkspaceMember"];

// Another tab signing in or out with a token: this one follows.
if (typeof window !== "undefined") {
  window.addEventListener("storage", (e) => {
    if (e.key === TOKEN_KEY) void restore();
  });
}

export type Role = "admin" | "editor" | "operator" | "approver" | "viewer";
export const ROLES: Role[] = ["admin", "editor", "operator", "approver", "viewer"];

// Me is the signed-in caller (GET /api/v1/me): a user, or the admin token
// ({role: "admin", bootstrap: true}).
export interface Me {
  id?: string;
  email?: string;
  name?: string;
  role: Role;
  groups?: string[];
  disabled?: boolean;
  bootstrap?: boolean;
  csrf_token?: string;
  // workspace is the one the caller acts in (role is theirs there);
  // server_admin whether they are admin of every workspace.
  workspace?: string;
  server_admin?: boolean;
}

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

export interface Problem {
  code?: string;
  node_id?: string;
  edge_id?: string;
  path: string;
  message: string;
}

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
      case "forbidden":
        return err.message || "Your role may not do that.";
      case "csrf":
        return "This page's session token is stale. Reload the page and try again.";
      case "rate_limited":
        return `Too many attempts. Try again${err.retryAfter ? ` in ${Math.ceil(err.retryAfter / 60)} min` : " later"}.`;
      case "unavailable":
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

export interface StreamEvent {
  id: number;
  run_id: string;
  seq: number;
  type: string;
  key?: string;
  payload: any;
  created_at: string;
}

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

// Types of the public contract (openapi.yaml).
export interface FlowGraph {
  nodes: GraphNode[];
  edges: GraphEdge[];
  // settings: the flow's own (deadlineSeconds, retentionDays,
  // entityConcurrency), kept as they are when not edited.
  settings?: Record<string, any>;
}
export interface GraphNode {
  id: string;
  type: string;
  position?: { x: number; y: number };
  data: Record<string, any>;
  [k: string]: any;
}
export interface GraphEdge {
  id: string;
  source: string;
  target: string;
  data?: Record<string, any>;
  [k: string]: any;
}
export interface Flow {
  id: string;
  name: string;
  board_id: string | null;
  version: { id: string; number: number };
  warnings?: Problem[] | null;
  graph?: FlowGraph;
  created_at: string;
  updated_at: string;
  // In the flows list: runs by status (a status in run_counts_capped has
  // that many or more) and triggers by kind.
  run_counts?: Record<RunStatus, number>;
  run_counts_capped?: string[];
  triggers?: Record<TriggerKind, number>;
}
export type TriggerKind = "webhook" | "schedule" | "event" | "nats" | "amqp";
export interface Version {
  id: string;
  number: number;
  message: string;
  created_at: string;
  graph?: FlowGraph;
}
export type NodeStatus = "pending" | "running" | "completed" | "failed" | "waiting_for_user" | "cancelled" | "skipped" | "sleeping" | "waiting_for_event";
export interface NodeState {
  key: string;
  node_id: string;
  type: string;
  index: number[];
  status: NodeStatus;
  input: any;
  output: any;
  error: string | null;
  attempt: number;
  // worker: who polled this attempt (a pulled Worker's task).
  worker?: string;
  // taken: the target node ids of the edges this node took once it decided
  // them; null when it took all of them (a plain completed node) or has
  // not decided yet.
  taken?: string[] | null;
  // iteration: the loop iteration of this row (0: the first pass). The
  // current row keeps the node's key; earlier iterations are kept as
  // <key>@<iteration>.
  iteration?: number;
  // wake_at: when a sleeping Wait node wakes (database time).
  wake_at?: string | null;
  // event_name, event_key: what a waiting_for_event Event node waits for.
  event_name?: string | null;
  event_key?: string | null;
  // deadline: when a running Worker attempt, a waiting UX node or an
  // Event node's wait times out.
  deadline?: string | null;
  // child_run_id: the run a SubFlow node started (its latest attempt's).
  child_run_id?: string | null;
  started_at: string | null;
  finished_at: string | null;
}
// queued: started for an entity whose run of the flow still goes; it
// waits its turn (settings.entityConcurrency "queue").
export type RunStatus = "running" | "queued" | "paused" | "completed" | "failed" | "cancelled";
export interface Run {
  id: string;
  flow_id: string;
  flow_version_id: string;
  status: RunStatus;
  input: any;
  output: any;
  error: string | null;
  entity_id: string | null;
  created_at: string;
  finished_at: string | null;
  // parent_run_id, parent_key: the run and the SubFlow node instance that
  // started this run (a sub-flow run).
  parent_run_id?: string | null;
  parent_key?: string | null;
  // started_by: the person who started the run (absent: a trigger, a
  // schedule or the admin token).
  started_by?: string;
  // variables: the run's variables (data.setVariables), in the answer of
  // one run.
  variables?: Record<string, any>;
  // compensation: the run's compensation once it began (its undo steps,
  // in the order they run); compensated / compensation_failed say how it
  // ended.
  compensation?: Compensation | null;
  compensated?: boolean;
  compensation_failed?: string;
  nodes?: Record<string, NodeState>;
}
export interface Compensation {
  reason: "failed" | "cancelled";
  error: string;
  steps: { step: string; undo: string }[];
  state: "compensating" | "compensated" | "failed" | "interrupted";
  failed_node?: string;
}
export interface Approval {
  run_id: string;
  key: string;
  node_id: string;
  flow_id: string;
  label: string;
  prompt: string;
  input: any;
  entity: { id: string; name: string; type: string; section?: string; section_id?: string; email: string | null; board_id: string } | null;
  // title: the entity's name and the step's label, or the label alone.
  title?: string;
  flow_name?: string;
  // run_input: the run's input (shown as labelled values without a summary).
  run_input?: any;
  // form_comment: the form's comment field is the decision's comment.
  form_comment?: boolean;
  form_outcomes?: string[];
  claimed_by?: string | null;
  claimed_at?: string | null;
  delegate?: string;
  remind_after_seconds?: number;
  escalation?: Escalation | null;
  outcomes?: string[] | null;
  waiting_since: string;
  // deadline: when the node times out (its timeoutSeconds), or null.
  deadline?: string | null;
  // on_timeout: what the deadline does: one of the outcomes, or "fail".
  on_timeout?: string | null;
  // iteration: the loop iteration the node waits in (0: the first pass).
  iteration?: number;
  // form: the JSON Schema (2020-12) of the answer, when the node has one.
  form?: Record<string, any> | null;
  // assignees: whom the node is assigned to (null: any approver).
  assignees?: { users?: string[] | null; groups?: string[] | null } | null;
  // required_approvals: how many people must choose the same outcome.
  required_approvals?: number;
  // votes: the decisions so far of this attempt.
  votes?: Vote[] | null;
  attempt?: number;
  // summary: the step's data.summary read from its input, labelled.
  summary?: { label: string; path: string; value: unknown }[];
}
// Escalation: how a step's data.escalation went so far.
export interface Escalation {
  steps: number;
  step: number;
  escalated_to?: Assignees | null;
  escalated_after_seconds?: number;
  next_at?: string;
  next_after_seconds?: number;
  next_to?: Assignees | null;
}
export interface Assignees {
  users?: string[] | null;
  groups?: string[] | null;
}
export interface Vote {
  by: string;
  for?: string;
  outcome: string;
  comment?: string;
  answer?: any;
  at: string;
}
export interface User {
  id: string;
  email: string;
  name: string;
  role: Role;
  groups: string[] | null;
  disabled: boolean;
  created_at?: string;
  updated_at?: string;
}
export interface ApiToken {
  id: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
  user_id?: string;
  // role "worker": a token that only polls task queues.
  role?: string;
}
export interface AuditEntry {
  id: string;
  at: string;
  actor: string;
  action: string;
  target: string;
  request_id: string;
  status: number;
  details: any;
  // summary: the change in business language ("fiona@example.com
  // approved Finance approval — run 01a2…c3f9e1").
  summary?: string;
}
export interface Entity {
  id: string;
  board_id: string;
  type: string;
  name: string;
  email: string | null;
  metadata: any;
  section_id: string | null;
  current_run_id: string | null;
  current_node_key: string | null;
  updated_at: string;
  time_in_section_seconds?: number;
  // overdue: longer in its section than the section's sla_seconds.
  overdue?: boolean;
  journey?: JourneyEvent[];
}
export interface JourneyEvent {
  id: string;
  kind: string;
  from_section_id: string | null;
  to_section_id: string | null;
  run_id: string | null;
  node_key: string | null;
  complete_as: string | null;
  // actor: who moved it by hand or decided the step that moved it.
  actor?: string;
  // comment: the comment of that decision (a rejection's reason).
  comment?: string;
  // details: of a task reassigned or escalated {assignees}, delegated {to}.
  details?: { assignees?: Assignees; to?: string; after_seconds?: number };
  created_at: string;
}

// Task is a task page (GET /runs/{id}/nodes/{key}/task).
export interface Task {
  run_id: string;
  key: string;
  label: string;
  prompt: string;
  status: string;
  attempt: number;
  run_status: string;
  flow_id: string;
  flow_name: string;
  run_input: any;
  entity: { id: string; name: string; type: string; section_id: string | null; board_id: string } | null;
  approval: Approval | null;
  graph: { nodes: any[]; edges: any[] };
  history: StreamEvent[];
  decisions: (Vote & { attempt: number })[];
  journey: JourneyEvent[];
}
export interface Section {
  id: string;
  name: string;
  // sla_seconds: how long an entity may stay before it is overdue.
  sla_seconds?: number | null;
  entities: Entity[];
  count: number;
  stats: { exits: number; avg_seconds_before_exit: number; avg_current_seconds: number };
  // The section's next page of entities (GET /boards/{id}?section_id=&cursor=); null on the last.
  next_cursor?: string | null;
}
export interface Board {
  id: string;
  name: string;
  sections: Section[];
  // card_fields: the metadata keys its cards show (empty: the first three).
  card_fields?: string[];
}

// Triggers of a flow (GET /flows/{id}/triggers).
export interface WebhookTrigger {
  id: string;
  kind: "webhook";
  flow_id: string;
  slug: string;
  url: string;
  has_secret: boolean;
  entity: { board_id?: string; type?: string; name_path?: string; email_path?: string } | null;
  // input_schema: the JSON Schema every request body must meet (null: any).
  input_schema?: Record<string, any> | null;
  created_at: string;
  // respond: {mode: "wait", timeout_seconds}: the hook waits for the
  // run (or a Respond step) to answer its caller; null: 202 at once.
  respond?: { mode: "wait"; timeout_seconds: number } | null;
}
// A webhook trigger's secret rotation (POST /triggers/{id}/rotate-secret):
// the new secret, shown this once, and when the one it replaced stops
// being accepted.
export interface RotatedTriggerSecret extends WebhookTrigger {
  secret: string;
  previous_secret_expires_at: string | null;
}
export interface ScheduleTrigger {
  id: string;
  kind: "schedule";
  flow_id: string;
  cron: string;
  timezone: string;
  input: any;
  overlap: "skip" | "allow";
  catch_up: "one" | "none";
  enabled: boolean;
  // next_fire_at: null while disabled.
  next_fire_at: string | null;
  last_fired_at: string | null;
  last_run_id: string | null;
  // last_error: why the last due tick started no run.
  last_error: string | null;
  created_at: string;
  updated_at: string;
}
// A broker trigger: a NATS JetStream subject or a RabbitMQ queue consumed
// by every stitchd process (docs/triggers.md).
export interface BrokerConsumer {
  instance_id: string;
  connected: boolean;
  connected_at: string | null;
  last_error: string | null;
  last_error_at: string | null;
  seen_at: string;
}
export interface BrokerTrigger {
  id: string;
  kind: "nats" | "amqp";
  flow_id: string;
  // url: the password shown as xxxxx.
  url: string;
  subject?: string;
  stream?: string;
  durable?: string;
  deliver?: "all" | "new";
  ack_wait_seconds?: number;
  queue?: string;
  prefetch?: number;
  as: "run" | "event";
  name?: string;
  key?: string;
  key_header?: string;
  ttl_seconds?: number;
  enabled: boolean;
  // connected: a stitchd process consumes it now.
  connected: boolean;
  last_error: string | null;
  last_error_at: string | null;
  consumers: BrokerConsumer[];
  created_at: string;
  updated_at: string;
}
export type Trigger = WebhookTrigger | ScheduleTrigger | BrokerTrigger;

// Percentiles of a duration (analytics).
export interface Percentiles {
  p50: number | null;
  p90?: number | null;
  p95?: number | null;
  max?: number | null;
}

// GET /boards/{id}/analytics.
export interface BoardAnalytics {
  from: string;
  to: string;
  entities: number;
  sections: {
    id: string;
    name: string;
    sla_seconds: number | null;
    entered: number;
    left: number;
    current: number;
    time_in_section_seconds: Percentiles;
    next: { section_id: string; count: number }[];
    overdue: number;
  }[];
}

// GET /flows/{id}/analytics.
export interface FlowAnalytics {
  from: string;
  to: string;
  bucket: string;
  runs: { started: number; completed: number; failed: number; cancelled: number; running: number };
  nodes: {
    key: string;
    fired: number;
    completed: number;
    failed: number;
    skipped: number;
    waiting_now: number;
    duration_ms: Percentiles;
    outcomes: Record<string, number>;
  }[];
  timeline: { bucket: string; started: number; completed: number; failed: number }[];
}

// download fetches an API answer (with the caller's credential) and saves
// it as a file: a CSV export.
export async function download(path: string, name: string): Promise<void> {
  const headers: Record<string, string> = { Accept: "text/csv" };
  const token = getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  workspaceHeader(headers);
  const res = await fetch(`/api/v1${path}`, { headers });
  if (!res.ok) throw new ApiError(res.status, "download_failed", `The export failed (${res.status}).`);
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
