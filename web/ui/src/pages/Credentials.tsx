import { useState, type FormEvent } from "react";
import { api, ApiError, describe, type Credential } from "../api";
import { ago, Empty, ErrorBox, Spinner, useLoad } from "../components/common";

// A stored credential as the API shows it: never its data.
export type CredentialInfo = Credential;

// FIELDS are each type's data fields, in the order a person fills them
// in; secret ones are typed into password boxes.
const FIELDS: Record<string, { key: string; label: string; secret?: boolean; optional?: boolean; kind?: "number" | "tls" | "where" }[]> = {
  bearer: [{ key: "token", label: "Token", secret: true }],
  basic: [
    { key: "username", label: "Username" },
    { key: "password", label: "Password", secret: true },
  ],
  api_key: [
    { key: "where", label: "Sent as", kind: "where" },
    { key: "name", label: "Header or query parameter name" },
    { key: "value", label: "Key", secret: true },
  ],
  oauth2_client_credentials: [
    { key: "token_url", label: "Token URL" },
    { key: "client_id", label: "Client id" },
    { key: "client_secret", label: "Client secret", secret: true },
    { key: "scope", label: "Scope", optional: true },
  ],
  smtp: [
    { key: "host", label: "SMTP server" },
    { key: "port", label: "Port", kind: "number" },
    { key: "tls", label: "Encryption", kind: "tls" },
    { key: "username", label: "Username", optional: true },
    { key: "password", label: "Password", secret: true, optional: true },
    { key: "from", label: "From address" },
  ],
};

const TYPE_LABEL: Record<string, string> = {
  bearer: "Bearer token",
  basic: "Basic auth",
  api_key: "API key",
  oauth2_client_credentials: "OAuth2 client credentials",
  smtp: "SMTP (email)",
};

const FRESH: Record<string, string> = { where: "header", port: "587", tls: "starttls" };

// dataOf turns the form's fields into the type's data object.
function dataOf(type: string, f: Record<string, string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const fd of FIELDS[type]) {
    const v = (f[fd.key] ?? "").trim();
    if (fd.key === "where" || fd.key === "name") continue;
    if (fd.optional && v === "") continue;
    out[fd.key] = fd.kind === "number" ? Number(v) : v;
  }
  if (type === "api_key") out[f.where === "query" ? "query" : "header"] = (f.name ?? "").trim();
  return out;
}

// Credentials lists the stored credentials (name, type, where they may be
// sent — never their data) and creates, replaces and deletes them.
export function Credentials() {
  const { data, error, loading, reload } = useLoad(() => api<{ credentials: CredentialInfo[] }>("GET", "/credentials"), []);
  // editing: null (no form), "" (a new credential) or the name replaced.
  const [editing, setEditing] = useState<string | null>(null);
  const [name, setName] = useState("");
  const [type, setType] = useState("bearer");
  const [fields, setFields] = useState<Record<string, string>>({ ...FRESH });
  const [hosts, setHosts] = useState("");
  const [busy, setBusy] = useState(false);
  const [formError, setFormError] = useState<string | null>(null);
  const [problems, setProblems] = useState<{ path: string; message: string }[]>([]);
  const [notice, setNotice] = useState<string | null>(null);
  const [actionError, setActionError] = useState<string | null>(null);

  function open(c: CredentialInfo | null) {
    setEditing(c ? c.name : "");
    setName(c?.name ?? "");
    setType(c?.type ?? "bearer");
    setFields({ ...FRESH });
    setHosts(c ? c.allowed_hosts.join("\n") : "");
    setFormError(null);
    setProblems([]);
    setNotice(null);
  }

  async function save(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setFormError(null);
    setProblems([]);
    const body = {
      type,
      data: dataOf(type, fields),
      allowed_hosts: hosts
        .split(/[\s,]+/)
        .map((h) => h.trim())
        .filter(Boolean),
    };
    try {
      if (editing) await api("PUT", `/credentials/${encodeURIComponent(editing)}`, body);
      else await api("POST", "/credentials", { name: name.trim(), ...body });
      setNotice(editing ? `Credential “${editing}” replaced.` : `Credential “${name.trim()}” saved.`);
      setEditing(null);
      setFields({ ...FRESH });
      reload();
    } catch (err) {
      setFormError(describe(err));
      if (err instanceof ApiError) setProblems(err.details);
    } finally {
      setBusy(false);
    }
  }

  async function remove(c: CredentialInfo) {
    if (!confirm(`Delete the credential “${c.name}”? Steps that carry it fail when they next send.`)) return;
    setActionError(null);
    setNotice(null);
    try {
      await api("DELETE", `/credentials/${encodeURIComponent(c.name)}`);
    } catch (err) {
      setActionError(`Could not delete ${c.name}: ${describe(err)}`);
    }
    reload();
  }

  const set = (k: string, v: string) => setFields((f) => ({ ...f, [k]: v }));

  return (
    <section className="page">
      <div className="page-head">
        <h1>Credentials</h1>
        {editing === null && (
          <button type="button" className="btn primary" onClick={() => open(null)}>
            New credential
          </button>
        )}
      </div>
      <p className="muted">
        A credential is a login an HTTP or Email step carries by name (<code>"credential": "crm"</code>) without its value ever being written into a flow,
        a run or a log. It is sent only to its allowed hosts. Its data is never shown again after it is saved.
      </p>
      {notice && (
        <div className="banner ok" role="status">
          {notice}
        </div>
      )}
      {editing !== null && (
        <form className="card credential-form" onSubmit={save} aria-label={editing ? `Replace credential ${editing}` : "New credential"}>
          <div className="form-grid">
            <label htmlFor="cred-name">Name</label>
            <input
              id="cred-name"
              value={name}
              onChange={(e) => setName(e.target.value)}
              disabled={!!editing}
              placeholder="e.g. CRM_API"
              maxLength={100}
              required
            />
            <label htmlFor="cred-type">Type</label>
            <select
              id="cred-type"
              value={type}
              onChange={(e) => {
                setType(e.target.value);
                setFields({ ...FRESH });
              }}
            >
              {Object.keys(FIELDS).map((t) => (
                <option key={t} value={t}>
                  {TYPE_LABEL[t]}
                </option>
              ))}
            </select>
            {FIELDS[type].map((fd) => {
              const id = `cred-${fd.key}`;
              let input;
              if (fd.kind === "where")
                input = (
                  <select id={id} value={fields.where} onChange={(e) => set("where", e.target.value)}>
                    <option value="header">a header</option>
                    <option value="query">a query parameter</option>
                  </select>
                );
              else if (fd.kind === "tls")
                input = (
                  <select id={id} value={fields.tls} onChange={(e) => set("tls", e.target.value)}>
                    <option value="starttls">STARTTLS (port 587)</option>
                    <option value="tls">TLS (port 465)</option>
                    <option value="none">none (a relay on this machine)</option>
                  </select>
                );
              else
                input = (
                  <input
                    id={id}
                    type={fd.secret ? "password" : fd.kind === "number" ? "number" : "text"}
                    autoComplete={fd.secret ? "new-password" : "off"}
                    value={fields[fd.key] ?? ""}
                    onChange={(e) => set(fd.key, e.target.value)}
                    required={!fd.optional}
                    data-cred-field={fd.key}
                  />
                );
              return (
                <div key={fd.key} className="contents">
                  <label htmlFor={id}>
                    {fd.label}
                    {fd.optional && <span className="muted"> (optional)</span>}
                  </label>
                  {input}
                </div>
              );
            })}
            <label htmlFor="cred-hosts">Allowed hosts</label>
            <textarea
              id="cred-hosts"
              rows={2}
              value={hosts}
              onChange={(e) => setHosts(e.target.value)}
              placeholder={type === "smtp" ? "smtp.example.com:587" : "api.example.com"}
              aria-describedby="cred-hosts-help"
            />
          </div>
          <p id="cred-hosts-help" className="muted small">
            One per line: a host, or host:port. A request carrying the credential to any other host fails its step before anything is sent
            {type === "oauth2_client_credentials" ? " (the token URL's host too)" : ""}
            {type === "smtp" ? " (for email: the SMTP server's host:port)" : ""}.
          </p>
          {editing && <p className="muted small">The stored data is not shown: enter it again to replace the credential.</p>}
          {formError && (
            <div className="field-error" role="alert">
              {formError}
              {problems.length > 0 && (
                <ul>
                  {problems.map((p, i) => (
                    <li key={i}>
                      <code>{p.path}</code>: {p.message}
                    </li>
                  ))}
                </ul>
              )}
            </div>
          )}
          <div className="row">
            <button type="submit" className="btn primary" disabled={busy}>
              {busy ? "Saving…" : editing ? "Replace" : "Save credential"}
            </button>
            <button type="button" className="btn ghost" onClick={() => setEditing(null)}>
              Cancel
            </button>
          </div>
        </form>
      )}
      {actionError && (
        <div className="error-box" role="alert">
          {actionError}
        </div>
      )}
      <ErrorBox error={error} onRetry={reload} />
      {loading && <Spinner label="Loading credentials…" />}
      {data && data.credentials.length === 0 && (
        <Empty title="No credentials yet">
          <p>Store a login once here, then name it in an HTTP or Email step.</p>
        </Empty>
      )}
      {data && data.credentials.length > 0 && (
        <div className="table-wrap">
          <table className="table" aria-label="Credentials">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Type</th>
                <th scope="col">Allowed hosts</th>
                <th scope="col">Changed</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {data.credentials.map((c) => (
                <tr key={c.name} data-credential={c.name}>
                  <td className="mono">{c.name}</td>
                  <td>{TYPE_LABEL[c.type] ?? c.type}</td>
                  <td className="mono">{c.allowed_hosts.join(", ")}</td>
                  <td title={c.updated_at}>{ago(c.updated_at)}</td>
                  <td className="actions">
                    <button type="button" className="btn small" onClick={() => open(c)}>
                      Replace
                    </button>
                    <button type="button" className="btn danger small" onClick={() => void remove(c)}>
                      Delete
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
