import { useState, type FormEvent } from "react";
import { api, describe, type ApiToken } from "../api";
import { ago, copyText, Empty, ErrorBox, Spinner, useLoad } from "../components/common";

// Tokens lists the signed-in person's API tokens, makes new ones (the
// secret is shown once, here) and revokes them.
export function Tokens() {
  const { data, error, loading, reload } = useLoad(() => api<{ tokens: ApiToken[] }>("GET", "/tokens"), []);
  const [name, setName] = useState("");
  const [workerOnly, setWorkerOnly] = useState(false);
  const [made, setMade] = useState<{ id: string; name: string; token: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const [formError, setFormError] = useState<string | null>(null);
  const [actionError, setActionError] = useState<string | null>(null);
  const [copied, setCopied] = useState<"" | "yes" | "no">("");

  async function create(e: FormEvent) {
    e.preventDefault();
    if (!name.trim()) {
      setFormError("Name the token after what will use it, e.g. “ci” or “laptop script”.");
      return;
    }
    setBusy(true);
    setFormError(null);
    try {
      const t = await api<{ id: string; name: string; token: string }>("POST", "/tokens", workerOnly ? { name: name.trim(), role: "worker" } : { name: name.trim() });
      setMade(t);
      setCopied("");
      setName("");
      reload();
    } catch (err) {
      setFormError(describe(err));
    } finally {
      setBusy(false);
    }
  }

  async function revoke(t: ApiToken) {
    if (!confirm(`Revoke the token “${t.name}”? Whatever uses it stops working at once.`)) return;
    setActionError(null);
    try {
      await api("DELETE", `/tokens/${t.id}`);
      if (made?.id === t.id) setMade(null);
    } catch (err) {
      setActionError(`Could not revoke ${t.name}: ${describe(err)}`);
    }
    reload();
  }

  return (
    <section className="page">
      <div className="page-head">
        <h1>My tokens</h1>
      </div>
      <p className="muted">
        A token lets a script or a service call the API as you, with your role: send it as <code>Authorization: Bearer …</code>.
      </p>
      <form className="card token-form" onSubmit={create} aria-label="New token">
        <div className="row">
          <label htmlFor="token-name" className="sr-only">
            Token name
          </label>
          <input id="token-name" placeholder="Name, e.g. ci" maxLength={100} value={name} onChange={(e) => setName(e.target.value)} aria-invalid={!!formError} />
          <label className="inline" title="A worker token may poll task queues (POST /api/v1/tasks/poll) and do nothing else.">
            <input type="checkbox" checked={workerOnly} onChange={(e) => setWorkerOnly(e.target.checked)} data-worker-only /> For a pull worker only
          </label>
          <button type="submit" className="btn primary" disabled={busy}>
            {busy ? "Creating…" : "Create token"}
          </button>
        </div>
        {formError && (
          <p className="field-error" role="alert">
            {formError}
          </p>
        )}
      </form>
      {made && (
        <div className="banner ok new-token" role="status" data-token-id={made.id}>
          <p>
            <strong>Token “{made.name}” created.</strong> Copy it now: it is not shown again.
          </p>
          <div className="row">
            <input className="mono" readOnly value={made.token} aria-label="The new token" onFocus={(e) => e.target.select()} data-new-token />
            <button
              type="button"
              className="btn small"
              onClick={() => void copyText(made.token).then((ok) => setCopied(ok ? "yes" : "no"))}
            >
              {copied === "yes" ? "Copied" : "Copy"}
            </button>
            <button type="button" className="btn ghost small" onClick={() => setMade(null)}>
              Done
            </button>
          </div>
          {copied === "no" && (
            <p className="field-error" role="alert">
              This browser did not let the page copy it: select the token and copy it yourself (Ctrl+C or ⌘C).
            </p>
          )}
        </div>
      )}
      {actionError && (
        <div className="error-box" role="alert">
          {actionError}
        </div>
      )}
      <ErrorBox error={error} onRetry={reload} />
      {loading && <Spinner label="Loading tokens…" />}
      {data && data.tokens.length === 0 && <Empty title="No tokens yet" />}
      {data && data.tokens.length > 0 && (
        <div className="table-wrap">
          <table className="table" aria-label="Tokens">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {data.tokens.map((t) => (
                <tr key={t.id} data-token={t.name}>
                  <td>
                    {t.name}
                    {t.role === "worker" && <span className="role-chip">worker</span>}
                  </td>
                  <td title={t.created_at}>{ago(t.created_at)}</td>
                  <td title={t.last_used_at ?? undefined}>{t.last_used_at ? ago(t.last_used_at) : "never"}</td>
                  <td className="actions">
                    <button type="button" className="btn danger small" onClick={() => void revoke(t)}>
                      Revoke
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
