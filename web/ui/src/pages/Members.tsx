import { useState, type FormEvent } from "react";
import { api, currentMe, describe, restore, ROLES, type Role, type WorkspaceMember as Member } from "../api";
import { Empty, ErrorBox, isNotFound, Spinner, useLoad } from "../components/common";

// Members is a workspace admin's page of the people of the workspace
// (docs/workspaces.md): their role here, given, changed or taken away.
// A person is made once, on the server admin's Users page; here they are
// given a role by email.
export function Members() {
  const slug = currentMe().me?.workspace ?? "default";
  const path = `/workspaces/${encodeURIComponent(slug)}/members`;
  const { data, error, loading, reload } = useLoad(() => api<{ members: Member[] }>("GET", path), [path]);
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<Role>("viewer");
  const [actionError, setActionError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function put(who: string, r: Role) {
    setActionError(null);
    setBusy(true);
    try {
      await api("PUT", `${path}/${encodeURIComponent(who)}`, { role: r });
      // One's own role changed: the page, the menu and what is offered
      // follow it at once (they went on offering an admin's pages).
      if (who.toLowerCase() === currentMe().me?.email?.toLowerCase()) await restore();
      return true;
    } catch (err) {
      setActionError(
        isNotFound(err) && !data?.members.some((m) => m.email === who)
          ? `${who} has no account yet: a server admin makes it on the Users page first, then you give them a role here.`
          : `Could not give ${who} the role ${r}: ${describe(err)}`,
      );
      return false;
    } finally {
      setBusy(false);
      reload();
    }
  }

  async function add(e: FormEvent) {
    e.preventDefault();
    if (await put(email.trim(), role)) setEmail("");
  }

  async function remove(m: Member) {
    if (!confirm(`Take ${m.email} out of this workspace? They keep their account and their roles elsewhere.`)) return;
    setActionError(null);
    try {
      await api("DELETE", `${path}/${encodeURIComponent(m.email)}`);
      if (m.email.toLowerCase() === currentMe().me?.email?.toLowerCase()) await restore();
    } catch (err) {
      setActionError(`Could not remove ${m.email}: ${describe(err)}`);
    }
    reload();
  }

  return (
    <section className="page">
      <div className="page-head">
        <h1>Members of {slug}</h1>
      </div>
      <form className="card member-add" onSubmit={(e) => void add(e)} aria-label="Add a member">
        <label>
          Email
          <input id="member-email" type="email" required value={email} onChange={(e) => setEmail(e.target.value)} placeholder="ana@example.com" />
        </label>
        <label>
          Role
          <select id="member-role" value={role} onChange={(e) => setRole(e.target.value as Role)}>
            {ROLES.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" className="btn primary" disabled={busy || !email.trim()} data-action="add-member">
          Add
        </button>
      </form>
      {actionError && (
        <div className="error-box" role="alert">
          {actionError}
        </div>
      )}
      <ErrorBox error={error} onRetry={reload} />
      {loading && <Spinner label="Loading members…" />}
      {data && data.members.length === 0 && (
        <Empty title="No members yet">
          <p>Give people a role here by email; server admins are admins of every workspace anyway.</p>
        </Empty>
      )}
      {data && data.members.length > 0 && (
        <div className="table-wrap">
          <table className="table" aria-label="Members">
            <thead>
              <tr>
                <th scope="col">Email</th>
                <th scope="col">Name</th>
                <th scope="col">Role</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {data.members.map((m) => (
                <tr key={m.user_id} data-member={m.email}>
                  <td>{m.email}</td>
                  <td>{m.name}</td>
                  <td>
                    <select aria-label={`Role of ${m.email}`} value={m.role} disabled={busy} onChange={(e) => void put(m.email, e.target.value as Role)}>
                      {ROLES.map((r) => (
                        <option key={r} value={r}>
                          {r}
                        </option>
                      ))}
                    </select>
                  </td>
                  <td className="actions">
                    <button type="button" className="btn danger" onClick={() => void remove(m)}>
                      Remove
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
