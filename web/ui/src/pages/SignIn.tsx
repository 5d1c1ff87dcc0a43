import { useEffect, useState, type FormEvent } from "react";
import { api, ApiError, describe, restore, setToken, type Me } from "../api";

// SignIn signs a person in with their email and password (a session
// cookie the page cannot read, and a CSRF token kept in memory), or, as a
// second way, with an API token kept in the browser (localStorage, so
// that it holds across tabs until sign-out): sent as a Bearer header,
// never put in a URL. When the
// server has OIDC sign-in (GET /auth/providers), a "Sign in with SSO" link
// goes through the provider and comes back to this page's address.
export function SignIn() {
  const [mode, setMode] = useState<"password" | "token">("password");
  return (
    <div className="signin">
      {mode === "password" ? <PasswordForm onToken={() => setMode("token")} /> : <TokenForm onPassword={() => setMode("password")} />}
    </div>
  );
}

function Brand() {
  return (
    <div className="brand big">
      <span className="logo" aria-hidden="true" /> stitchd
    </div>
  );
}

// useSSO is the OIDC login URL, or null when the server has none.
function useSSO(): string | null {
  const [url, setURL] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    api<{ oidc?: { enabled: boolean; login_url: string } }>("GET", "/auth/providers", undefined, null, { quiet: true })
      .then((p) => {
        if (live && p.oidc?.enabled) setURL(p.oidc.login_url);
      })
      .catch(() => {});
    return () => {
      live = false;
    };
  }, []);
  return url;
}

function PasswordForm({ onToken }: { onToken: () => void }) {
  const sso = useSSO();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function submit(e: FormEvent) {
    e.preventDefault();
    if (!email.trim() || !password) {
      setError("Enter your email and your password.");
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await api<{ user: Me; csrf_token: string }>("POST", "/auth/login", { email: email.trim(), password }, null, { quiet: true });
      // The caller as the workspace this browser acts in sees them (their
      // role is the workspace's).
      await restore();
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) setError("Wrong email or password.");
      else if (err instanceof ApiError && err.code === "account_disabled") setError("This account is disabled. Ask an admin to enable it.");
      else setError(describe(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <form className="card signin-card" method="post" onSubmit={submit} aria-labelledby="signin-title">
      <Brand />
      <h1 id="signin-title">Sign in</h1>
      <label htmlFor="email">Email</label>
      <input
        id="email"
        name="email"
        type="email"
        autoComplete="username"
        autoFocus
        value={email}
        onChange={(e) => setEmail(e.target.value)}
        aria-invalid={!!error}
        aria-describedby={error ? "signin-error" : undefined}
      />
      <label htmlFor="password">Password</label>
      <input
        id="password"
        name="password"
        type="password"
        autoComplete="current-password"
        value={password}
        onChange={(e) => setPassword(e.target.value)}
        aria-invalid={!!error}
        aria-describedby={error ? "signin-error" : undefined}
      />
      {error && (
        <p id="signin-error" className="field-error" role="alert">
          {error}
        </p>
      )}
      <button type="submit" className="btn primary" disabled={busy}>
        {busy ? "Signing in…" : "Sign in"}
      </button>
      {sso && (
        <a className="btn" data-action="sso" href={`${sso}?next=${encodeURIComponent(location.pathname + location.search)}`}>
          Sign in with SSO
        </a>
      )}
      <button type="button" className="linklike" data-action="use-token" onClick={onToken}>
        Sign in with an API token
      </button>
    </form>
  );
}

function TokenForm({ onPassword }: { onPassword: () => void }) {
  const [token, setValue] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function submit(e: FormEvent) {
    e.preventDefault();
    const t = token.trim();
    if (!t) {
      setError("Enter an API token: one of yours (My tokens) or the one stitchd was started with (STITCHD_AUTH_TOKEN).");
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await api<Me>("GET", "/me", undefined, t, { quiet: true });
      setToken(t);
      await restore();
    } catch (err) {
      setError(err instanceof ApiError && err.status === 401 ? "That token was not accepted: it is wrong, revoked, or its user is disabled." : describe(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <form className="card signin-card" method="post" onSubmit={submit} aria-labelledby="signin-title">
      <Brand />
      <h1 id="signin-title">Sign in with an API token</h1>
      <p className="muted">A personal token acts as its user; the server's admin token (STITCHD_AUTH_TOKEN) as admin.</p>
      <label htmlFor="token">API token</label>
      <input
        id="token"
        name="token"
        type="password"
        autoComplete="off"
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
      <button type="button" className="linklike" data-action="use-password" onClick={onPassword}>
        Sign in with email and password
      </button>
    </form>
  );
}
