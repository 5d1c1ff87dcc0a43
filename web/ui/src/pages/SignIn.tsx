import { useState, type FormEvent } from "react";
import { api, ApiError, describe, setToken } from "../api";

// SignIn checks the API token against the server and keeps it in the
// browser session (sessionStorage): it is sent as a Bearer header, never
// put in a URL.
export function SignIn() {
  const [token, setValue] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function submit(e: FormEvent) {
    e.preventDefault();
    const t = token.trim();
    if (!t) {
      setError("Enter the API token stitchd was started with (STITCHD_AUTH_TOKEN).");
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await api("GET", "/flows", undefined, t);
      setToken(t);
    } catch (err) {
      setError(err instanceof ApiError && err.status === 401 ? "That token was not accepted. Check STITCHD_AUTH_TOKEN on the server." : describe(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <div className="signin">
      <form className="card signin-card" method="post" onSubmit={submit} aria-labelledby="signin-title">
        <div className="brand big">
          <span className="logo" aria-hidden="true" /> stitchd
        </div>
        <h1 id="signin-title">Sign in</h1>
        <p className="muted">Use the API token this server was started with.</p>
        <label htmlFor="token">API token</label>
        <input
          id="token"
          name="token"
          type="password"
          autoComplete="current-password"
          autoFocus
          value={token}
          onChange={(e) => setValue(e.target.value)}
          aria-invalid={!!error}
          aria-describedby={error ? "signin-error" : undefined}
        />
        {error && (
          <p id="signin-error" className="field-error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" className="btn primary" disabled={busy}>
          {busy ? "Checking…" : "Sign in"}
        </button>
      </form>
    </div>
  );
}
