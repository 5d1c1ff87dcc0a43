// Settings of the steps that talk to the outside world: an HTTP node
// (calls an existing REST API) and an Event node (waits for an event
// posted to /api/v1/events).
import { useState } from "react";
import { useTemplateTarget } from "../components/exprTarget";
import type { Problem } from "../api";
import { span } from "../components/common";
import { HTTP_METHODS, parseSuccessCodes } from "../graph";
import { Field, RetryFields, ServerProblems } from "./NodeSettings";

type Problems = (Problem & { stale?: boolean })[];

export const HTTP_FIELDS = ["method", "url", "headers", "body", "timeoutSeconds", "retry", "successCodes"];
export const EVENT_FIELDS = ["event", "key", "timeoutSeconds", "onTimeout"];

const num = (s: string) => (s.trim() === "" ? undefined : Number(s));

function put(data: Record<string, any>, k: string, v: any): Record<string, any> {
  const next = { ...data };
  if (v === undefined || v === "" || (typeof v === "number" && isNaN(v))) delete next[k];
  else next[k] = v;
  return next;
}

// headerOf reads the header name a problem's path names:
// nodes[0].data.headers["X-A"] or nodes[0].data.headers.X-A.
function headerOf(path: string | undefined): string | null {
  const m = /\.data\.headers(?:\["((?:[^"\\]|\\.)*)"\]|\.([^.[\]]+))/.exec(path ?? "");
  if (!m) return null;
  if (m[1] !== undefined) {
    try {
      return JSON.parse(`"${m[1]}"`);
    } catch {
      return m[1];
    }
  }
  return m[2];
}

type BodyMode = "none" | "json" | "text";

function bodyMode(body: unknown): BodyMode {
  if (body === undefined) return "none";
  return typeof body === "string" ? "text" : "json";
}

// checkJSON says what is wrong with a JSON text, or null.
// useBodyDraft is a body field's state (an HTTP node's request body, a
// Respond node's answer): none, JSON (checked as it is typed; the saved
// body changes only while it parses) or text (may hold templates).
function useBodyDraft(data: Record<string, any>, onChange: (d: Record<string, any>) => void) {
  const [mode, setMode] = useState<BodyMode>(() => bodyMode(data.body));
  const [draft, setDraft] = useState<string>(() =>
    data.body === undefined ? "" : typeof data.body === "string" ? data.body : JSON.stringify(data.body, null, 2),
  );
  const jsonError = mode === "json" && draft.trim() ? checkJSON(draft) : null;
  const switchBody = (m: BodyMode) => {
    setMode(m);
    if (m === "none") return onChange(put(data, "body", undefined));
    if (m === "text") return onChange(put(data, "body", draft));
    if (draft.trim() && !checkJSON(draft)) onChange(put(data, "body", JSON.parse(draft)));
    else onChange(put(data, "body", undefined));
  };
  const typeBody = (t: string) => {
    setDraft(t);
    if (mode === "text") onChange({ ...data, body: t });
    else if (!t.trim()) onChange(put(data, "body", undefined));
    else if (!checkJSON(t)) onChange({ ...data, body: JSON.parse(t) });
  };
  return { mode, draft, jsonError, switchBody, typeBody };
}

export function checkJSON(text: string): string | null {
  try {
    JSON.parse(text);
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

// HTTPFields edits an HTTP node: method, url, headers, body, timeout,
// retry and success codes. Templates ({{ expr }}) are compiled by the
// server when the flow is saved; its messages are shown under the field.
export function HTTPFields({
  data,
  onChange,
  problemsAt,
  nodeId,
}: {
  data: Record<string, any>;
  onChange: (d: Record<string, any>) => void;
  problemsAt: (field: string) => Problems;
  nodeId: string;
}) {
  const set = (k: string) => (v: any) => onChange(put(data, k, v));
  // Headers are edited as rows (a name may be half typed or repeated).
  const [rows, setRows] = useState<[string, string][]>(() =>
    data.headers && typeof data.headers === "object" ? Object.entries(data.headers).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]) : [],
  );
  const commitRows = (next: [string, string][]) => {
    setRows(next);
    const h: Record<string, string> = {};
    for (const [k, v] of next) if (k.trim()) h[k.trim()] = v;
    onChange(put(data, "headers", Object.keys(h).length ? h : undefined));
  };
  const names = rows.map(([k]) => k.trim().toLowerCase()).filter(Boolean);
  const dupes = new Set(names.filter((n, i) => names.indexOf(n) !== i));
  const headerProblems = problemsAt("headers");
  const byRow = (k: string) => headerProblems.filter((p) => headerOf(p.path) === k.trim());
  const loose = headerProblems.filter((p) => !rows.some(([k]) => k.trim() && headerOf(p.path) === k.trim()));

  const { mode, draft, jsonError, switchBody, typeBody } = useBodyDraft(data, onChange);

  // The url and body take a path clicked in the data panel as {{ path }}.
  const urlTarget = useTemplateTarget<HTMLInputElement>((v) => set("url")(v));
  const bodyTarget = useTemplateTarget<HTMLTextAreaElement>((v) => typeBody(v));
  const [codes, setCodes] = useState<string>(() => (Array.isArray(data.successCodes) ? data.successCodes.join(", ") : ""));
  const parsedCodes = parseSuccessCodes(codes);
  const method = typeof data.method === "string" && data.method ? data.method.toUpperCase() : "GET";
  const sendsBody = method !== "GET" && method !== "HEAD";

  return (
    <fieldset className="http-fields" aria-label="HTTP request">
      <legend>Request</legend>
      <div className="row http-line">
        <label htmlFor="node-method" className="sr-only">
          Method
        </label>
        <select id="node-method" value={method} onChange={(e) => set("method")(e.target.value === "GET" && data.method === undefined ? undefined : e.target.value)}>
          {HTTP_METHODS.map((m) => (
            <option key={m} value={m}>
              {m}
            </option>
          ))}
        </select>
        <label htmlFor="node-http-url" className="sr-only">
          URL
        </label>
        <input
          id="node-http-url"
          ref={urlTarget.ref}
          onFocus={urlTarget.onFocus}
          className="mono"
          placeholder="https://api.example.com/leads/{{ input.id }}"
          spellCheck={false}
          value={data.url ?? ""}
          aria-invalid={problemsAt("url").some((p) => !p.stale)}
          onChange={(e) => set("url")(e.target.value)}
        />
      </div>
      <p className="hint">
        An absolute http(s) URL. <code>{"{{ expr }}"}</code> templates over <code>input</code>, <code>run</code> and <code>entity</code> may appear in the url,
        headers and body, e.g. <code>{"/leads/{{ input.id }}"}</code>.
      </p>
      <ServerProblems problems={[...problemsAt("method"), ...problemsAt("url")]} id={nodeId} />

      <div className="field headers-field" role="group" aria-label="Headers">
        <label>Headers</label>
        {rows.map(([k, v], i) => (
          <div key={i}>
            <div className="row">
              <label className="sr-only" htmlFor={`header-k-${i}`}>
                Header name {i + 1}
              </label>
              <input
                id={`header-k-${i}`}
                className="mono"
                placeholder="Authorization"
                value={k}
                aria-invalid={dupes.has(k.trim().toLowerCase()) || byRow(k).some((p) => !p.stale)}
                onChange={(e) => commitRows(rows.map((r, j) => (j === i ? [e.target.value, r[1]] : r)))}
              />
              <span aria-hidden="true">:</span>
              <label className="sr-only" htmlFor={`header-v-${i}`}>
                Header value {i + 1}
              </label>
              <input
                id={`header-v-${i}`}
                className="mono"
                placeholder="Bearer {{ input.token }}"
                value={v}
                onChange={(e) => commitRows(rows.map((r, j) => (j === i ? [r[0], e.target.value] : r)))}
              />
              <button type="button" className="btn ghost small" aria-label={`Remove header ${k || i + 1}`} onClick={() => commitRows(rows.filter((_, j) => j !== i))}>
                ×
              </button>
            </div>
            {k.trim() && <ServerProblems problems={byRow(k)} id={nodeId} />}
          </div>
        ))}
        <button type="button" className="btn small" onClick={() => setRows([...rows, ["", ""]])}>
          Add header
        </button>
        {dupes.size > 0 && (
          <p className="field-error" role="alert" data-check="local">
            A header is named twice ({[...dupes].join(", ")}): names are not case-sensitive, keep one.
          </p>
        )}
        <ServerProblems problems={loose} id={nodeId} />
      </div>

      <div className="field body-field">
        <label htmlFor="node-body">Body</label>
        <div className="tabs" role="radiogroup" aria-label="Body kind">
          {(["none", "json", "text"] as const).map((m) => (
            <label key={m} className={mode === m ? "active" : ""}>
              <input type="radio" name="body-mode" value={m} checked={mode === m} onChange={() => switchBody(m)} /> {m === "none" ? "none" : m === "json" ? "JSON" : "text"}
            </label>
          ))}
        </div>
        {mode !== "none" && (
          <textarea
            id="node-body"
            ref={bodyTarget.ref}
            onFocus={bodyTarget.onFocus}
            className="mono"
            rows={5}
            spellCheck={false}
            placeholder={mode === "json" ? '{"name": "{{ input.name }}", "employees": "{{ input.employees }}"}' : "lead {{ input.id }}"}
            value={draft}
            aria-invalid={!!jsonError || problemsAt("body").some((p) => !p.stale)}
            aria-describedby="node-body-help"
            onChange={(e) => typeBody(e.target.value)}
          />
        )}
        <p className="hint" id="node-body-help">
          {mode === "json"
            ? "Sent as JSON. A string that is exactly one {{ expr }} takes the value with its type."
            : mode === "text"
              ? "Sent as text; {{ expr }} templates are filled in."
              : "No body."}
          {mode !== "none" && !sendsBody ? ` A ${method} request usually has no body.` : ""}
        </p>
        {jsonError && (
          <p className="field-error" role="alert" data-check="local" data-json-error>
            Not valid JSON: {jsonError}. The saved body is the last valid one until this parses.
          </p>
        )}
        {mode === "json" && draft.trim() && !jsonError && (
          <p className="hint ok-text" data-json-ok>
            Valid JSON.
          </p>
        )}
        <ServerProblems problems={problemsAt("body")} id={nodeId} />
      </div>

      <Field label="Timeout (seconds)" id="node-timeout" hint="How long one request may take, its response body included. Default 30.">
        <input id="node-timeout" type="number" min={1} value={data.timeoutSeconds ?? ""} onChange={(e) => set("timeoutSeconds")(num(e.target.value))} />
      </Field>
      <ServerProblems problems={problemsAt("timeoutSeconds")} id={nodeId} />
      <div className="field">
        <label htmlFor="node-success">Success codes</label>
        <input
          id="node-success"
          className="mono"
          placeholder="2xx"
          value={codes}
          aria-invalid={!parsedCodes.ok || problemsAt("successCodes").some((p) => !p.stale)}
          onChange={(e) => {
            const t = e.target.value;
            setCodes(t);
            const p = parseSuccessCodes(t);
            if (p.ok) onChange(put(data, "successCodes", p.value.length ? p.value : undefined));
          }}
        />
        <p className="hint">Codes and classes, e.g. 200, 201, 404 or 2xx. Default 2xx. Other statuses fail the step (408, 429 and 5xx are retried).</p>
        {!parsedCodes.ok && (
          <p className="field-error" role="alert" data-check="local">
            {parsedCodes.message}
          </p>
        )}
        <ServerProblems problems={problemsAt("successCodes")} id={nodeId} />
      </div>
      <RetryFields retry={data.retry} set={(k) => (v) => onChange(putRetry(data, k, v))} />
      <ServerProblems problems={problemsAt("retry")} id={nodeId} />
    </fieldset>
  );
}

function putRetry(data: Record<string, any>, k: string, v: any): Record<string, any> {
  const r = put(typeof data.retry === "object" && data.retry ? data.retry : {}, k, v);
  return put(data, "retry", Object.keys(r).length ? r : undefined);
}

// EventFields edits an Event node: the event's name, the key expression
// (which run's wait an event completes) and an optional timeout.
export function EventFields({
  data,
  onChange,
  problemsAt,
  nodeId,
}: {
  data: Record<string, any>;
  onChange: (d: Record<string, any>) => void;
  problemsAt: (field: string) => Problems;
  nodeId: string;
}) {
  const set = (k: string) => (v: any) => onChange(put(data, k, v));
  const name = typeof data.event === "string" ? data.event : "";
  const key = typeof data.key === "string" ? data.key : "";
  const t = typeof data.timeoutSeconds === "number" ? data.timeoutSeconds : null;
  return (
    <fieldset className="event-fields" aria-label="Event">
      <legend>Event</legend>
      <Field label="Event name" id="node-event" hint="The name events are posted with, e.g. payment.received.">
        <input
          id="node-event"
          className="mono"
          placeholder="payment.received"
          value={name}
          maxLength={200}
          aria-invalid={problemsAt("event").some((p) => !p.stale)}
          onChange={(e) => set("event")(e.target.value)}
        />
      </Field>
      <ServerProblems problems={problemsAt("event")} id={nodeId} />
      <Field label="Key" id="node-event-key" hint="An expression over input, run and entity whose value picks this run's event, e.g. input.order_id.">
        <input
          id="node-event-key"
          className="mono"
          placeholder="input.order_id"
          spellCheck={false}
          value={key}
          aria-invalid={problemsAt("key").some((p) => !p.stale)}
          onChange={(e) => set("key")(e.target.value)}
        />
      </Field>
      <ServerProblems problems={problemsAt("key")} id={nodeId} />
      <Field
        label="Timeout (seconds, optional)"
        id="node-event-timeout"
        hint={t && t > 0 ? `Without the event within ${span(t * 1000)}, the step fails (a failure edge can take it on).` : "Without a timeout the step waits as long as it takes."}
      >
        <input id="node-event-timeout" type="number" min={1} value={data.timeoutSeconds ?? ""} onChange={(e) => set("timeoutSeconds")(num(e.target.value))} />
      </Field>
      <ServerProblems problems={[...problemsAt("timeoutSeconds"), ...problemsAt("onTimeout")]} id={nodeId} />
      {name.trim() && (
        <p className="hint" data-event-how>
          Completed by <code>POST /api/v1/events</code> <code>{`{"name": "${name.trim()}", "key": "…", "payload": {…}}`}</code>; the payload becomes this step's
          output. An event posted before the wait begins is kept (24 h by default).
        </p>
      )}
    </fieldset>
  );
}

export const RESPOND_FIELDS = ["status", "body"];

// RespondFields edits a Respond node: the status and the body it answers
// the webhook request waiting for the run with (a trigger with respond
// "wait"); the body is rendered as an HTTP node's.
export function RespondFields({
  data,
  onChange,
  problemsAt,
  nodeId,
}: {
  data: Record<string, any>;
  onChange: (d: Record<string, any>) => void;
  problemsAt: (field: string) => Problems;
  nodeId: string;
}) {
  const { mode, draft, jsonError, switchBody, typeBody } = useBodyDraft(data, onChange);
  const bodyTarget = useTemplateTarget<HTMLTextAreaElement>((v) => typeBody(v));
  const status = typeof data.status === "number" ? data.status : 200;
  const badStatus = !Number.isInteger(status) || status < 100 || status > 599;
  return (
    <fieldset className="respond-fields" aria-label="Answer to the caller">
      <legend>Answer</legend>
      <p className="hint">
        Answers the webhook request waiting for this run (a trigger with “wait for the run”) now; the run goes on. Without a caller waiting, the
        step just passes its input on.
      </p>
      <Field label="HTTP status" id="node-respond-status" error={badStatus ? "A status from 100 to 599." : null}>
        <input
          id="node-respond-status"
          type="number"
          min={100}
          max={599}
          value={data.status ?? ""}
          placeholder="200"
          onChange={(e) => onChange(put(data, "status", num(e.target.value)))}
        />
      </Field>
      <ServerProblems problems={problemsAt("status")} id={nodeId} />
      <div className="field body-field">
        <label htmlFor="node-respond-body">Body</label>
        <div className="tabs" role="radiogroup" aria-label="Body kind">
          {(["none", "json", "text"] as const).map((m) => (
            <label key={m} className={mode === m ? "active" : ""}>
              <input type="radio" name="respond-body-mode" value={m} checked={mode === m} onChange={() => switchBody(m)} />{" "}
              {m === "none" ? "none" : m === "json" ? "JSON" : "text"}
            </label>
          ))}
        </div>
        {mode !== "none" && (
          <textarea
            id="node-respond-body"
            ref={bodyTarget.ref}
            onFocus={bodyTarget.onFocus}
            className="mono"
            rows={5}
            spellCheck={false}
            placeholder={mode === "json" ? '{"accepted": "{{ input.order_id }}"}' : "Thanks, {{ input.name }}"}
            value={draft}
            aria-invalid={!!jsonError || problemsAt("body").some((p) => !p.stale)}
            onChange={(e) => typeBody(e.target.value)}
          />
        )}
        <p className="hint">
          {mode === "json"
            ? "Answered as JSON; {{ expr }} templates over input, run, steps and vars are filled in (a string that is exactly one {{ expr }} takes the value with its type)."
            : mode === "text"
              ? "Answered as text; {{ expr }} templates are filled in."
              : "No body."}
        </p>
        {jsonError && (
          <p className="field-error" role="alert" data-check="local">
            Not valid JSON: {jsonError}. The saved body is the last valid one until this parses.
          </p>
        )}
        <ServerProblems problems={problemsAt("body")} id={nodeId} />
      </div>
    </fieldset>
  );
}
