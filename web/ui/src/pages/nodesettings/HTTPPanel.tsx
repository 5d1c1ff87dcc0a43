// The settings of an HTTP node (calls an existing REST API).
import { useTemplateTarget } from "../../components/exprTarget";
import { useEffect, useState } from "react";
import { api, type Credential } from "../../api";
import { HTTP_METHODS, parseSuccessCodes } from "../../graph";
import { BodyField } from "./BodyField";
import { Field, num, put, RetryFields, ServerProblems, type PanelProps, type FieldsProps } from "./shared";

export const HTTP_FIELDS = ["method", "url", "headers", "body", "credential", "timeoutSeconds", "retry", "successCodes"];

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

// HTTPFields edits an HTTP node: method, url, headers, body, timeout,
// retry and success codes. Templates ({{ expr }}) are compiled by the
// server when the flow is saved; its messages are shown under the field.
export function HTTPFields(props: FieldsProps) {
  const { data, onChange, problemsAt, nodeId } = props;
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

  // The url takes a path clicked in the data panel as {{ path }}.
  const urlTarget = useTemplateTarget<HTMLInputElement>((v) => set("url")(v));
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

      <BodyField
        {...props}
        id="node-body"
        name="body-mode"
        placeholder={{ json: '{"name": "{{ input.name }}", "employees": "{{ input.employees }}"}', text: "lead {{ input.id }}" }}
        hint={{ json: "Sent as JSON. A string that is exactly one {{ expr }} takes the value with its type.", text: "Sent as text; {{ expr }} templates are filled in." }}
        note={sendsBody ? "" : ` A ${method} request usually has no body.`}
        validHint
      />

      <CredentialField value={typeof data.credential === "string" ? data.credential : ""} onChange={set("credential")} />
      <ServerProblems problems={problemsAt("credential")} id={nodeId} />
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

export function HTTPPanel({ node, data, onChange, problemsAt }: PanelProps) {
  return <HTTPFields data={data} onChange={onChange} problemsAt={problemsAt} nodeId={node.id} />;
}

// CredentialField names the stored credential the request carries (the
// Credentials page): typed, or picked from the workspace's credentials
// when the person may list them.
function CredentialField({ value, onChange }: { value: string; onChange: (v: string) => void }) {
  const [known, setKnown] = useState<Credential[] | null>(null);
  useEffect(() => {
    let live = true;
    api<{ credentials: Credential[] }>("GET", "/credentials", undefined, undefined, { quiet: true }).then(
      (r) => live && setKnown(r.credentials ?? []),
      () => {},
    );
    return () => {
      live = false;
    };
  }, []);
  const missing = !!value.trim() && !!known && !known.some((c) => c.name === value.trim());
  return (
    <Field
      label="Credential (optional)"
      id="node-credential"
      hint="A stored credential's name (Credentials page): the request carries its secret, which never shows in the flow or the run."
      error={missing ? `There is no credential named ${value.trim()}: add it on the Credentials page, or pick one from the list.` : null}
    >
      <input id="node-credential" className="mono" list="node-credential-names" value={value} aria-invalid={missing} onChange={(e) => onChange(e.target.value)} />
      <datalist id="node-credential-names">
        {(known ?? []).map((c) => (
          <option key={c.name} value={c.name} />
        ))}
      </datalist>
    </Field>
  );
}
