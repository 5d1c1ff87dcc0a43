import { useState, type FormEvent } from "react";
import { api, ApiError, currentMe, describe, ROLES, type Problem, type Role, type User } from "../api";
import { Empty, ErrorBox, FormErrors, Spinner, useLoad } from "../components/common";

const ROLE_HELP: Record<Role, string> = {
  admin: "everything: users, the audit trail, every decision",
  editor: "flows, triggers and boards",
  operator: "runs: start, cancel, pause, retry, rerun",
  approver: "the approvals assigned to them or their groups",
  viewer: "reads everything, changes nothing",
};

// Users is the admin's page of people: who they are, their role and
// groups, enabled or not; create, change, disable and delete them.
export function Users() {
  const { data, error, loading, reload } = useLoad(() => api<{ users: User[] }>("GET", "/users"), []);
  const [editing, setEditing] = useState<string | null>(null);
  const [creating, setCreating] = useState(false);
  const [actionError, setActionError] = useState<string | null>(null);
  const self = currentMe().me?.id;

  async function remove(u: User) {
    if (!confirm(`Delete ${u.email}? Their sessions and tokens end; the audit trail keeps their email.`)) return;
    setActionError(null);
    try {
      await api("DELETE", `/users/${u.id}`);
    } catch (err) {
      setActionError(`Could not delete ${u.email}: ${describe(err)}`);
    }
    reload();
  }

  return (
    <section className="page">
      <div className="page-head">
        <h1>Users</h1>
        <button type="button" className="btn primary" aria-expanded={creating} onClick={() => setCreating((c) => !c)}>
          New user
        </button>
      </div>
      {creating && (
        <UserForm
          onCancel={() => setCreating(false)}
          onSaved={() => {
            setCreating(false);
            reload();
          }}
        />
      )}
      {actionError && (
        <div className="error-box" role="alert">
          {actionError}
        </div>
      )}
      <ErrorBox error={error} onRetry={reload} />
      {loading && <Spinner label="Loading users…" />}
      {data && data.users.length === 0 && (
        <Empty title="No users yet">
          <p>Create the people who sign in: each has a role and may be in groups that approvals are assigned to.</p>
        </Empty>
      )}
      {data && data.users.length > 0 && (
        <div className="table-wrap">
          <table className="table" aria-label="Users">
            <thead>
              <tr>
                <th scope="col">Email</th>
                <th scope="col">Name</th>
                <th scope="col">Role</th>
                <th scope="col">Groups</th>
                <th scope="col">Status</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {data.users.map((u) =>
                editing === u.id ? (
                  <tr key={u.id} data-user={u.email}>
                    <td colSpan={6}>
                      <UserForm
                        user={u}
                        onCancel={() => setEditing(null)}
                        onSaved={() => {
                          setEditing(null);
                          reload();
                        }}
                      />
                    </td>
                  </tr>
                ) : (
                  <tr key={u.id} data-user={u.email} className={u.disabled ? "disabled" : undefined}>
                    <td>{u.email}</td>
                    <td>{u.name}</td>
                    <td>
                      <span className="role-chip" data-role={u.role}>
                        {u.role}
                      </span>
                    </td>
                    <td>{(u.groups ?? []).join(", ") || <span className="muted">—</span>}</td>
                    <td title={u.updated_at}>{u.disabled ? <span className="chip chip-warn">disabled</span> : <span className="chip chip-ok">active</span>}</td>
                    <td className="actions">
                      <button type="button" className="btn small" onClick={() => setEditing(u.id)}>
                        Edit
                      </button>{" "}
                      {u.id !== self && (
                        <button type="button" className="btn danger small" onClick={() => void remove(u)}>
                          Delete
                        </button>
                      )}
                    </td>
                  </tr>
                ),
              )}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

// UserForm creates a user (no user given) or changes one; the server's
// problems are shown under their fields.
function UserForm({ user, onCancel, onSaved }: { user?: User; onCancel: () => void; onSaved: () => void }) {
  const [email, setEmail] = useState(user?.email ?? "");
  const [name, setName] = useState(user?.name ?? "");
  const [role, setRole] = useState<Role>(user?.role ?? "viewer");
  const [groups, setGroups] = useState((user?.groups ?? []).join(", "));
  const [password, setPassword] = useState("");
  const [disabled, setDisabled] = useState(user?.disabled ?? false);
  const [problems, setProblems] = useState<Problem[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const idp = user ? `user-${user.id.slice(0, 8)}` : "user-new";
  const at = (field: string) => problems.filter((p) => (p.path ?? "").split(/[.[]/)[0] === field).map((p) => p.message);
  const other = problems.filter((p) => !["email", "name", "role", "groups", "password", "disabled"].includes((p.path ?? "").split(/[.[]/)[0]));

  async function submit(e: FormEvent) {
    e.preventDefault();
    const gs = groups
      .split(",")
      .map((g) => g.trim())
      .filter(Boolean);
    const body: Record<string, unknown> = { name, role, groups: gs };
    if (!user) body.email = email.trim();
    if (password) body.password = password;
    if (user && disabled !== user.disabled) body.disabled = disabled;
    setBusy(true);
    setError(null);
    setProblems([]);
    try {
      if (user) await api("PATCH", `/users/${user.id}`, body);
      else await api("POST", "/users", body);
      onSaved();
    } catch (err) {
      if (err instanceof ApiError && err.details.length) setProblems(err.details);
      else setError(describe(err));
    } finally {
      setBusy(false);
    }
  }

  const Err = ({ field }: { field: string }) => (
    <>
      {at(field).map((m, i) => (
        <p key={i} className="field-error" role="alert" data-problem={field}>
          {m}
        </p>
      ))}
    </>
  );

  return (
    <form className="card user-form" noValidate onSubmit={submit} aria-label={user ? `Edit ${user.email}` : "New user"}>
      <div className="row-fields">
        <div className="field">
          <label htmlFor={`${idp}-email`}>Email</label>
          <input id={`${idp}-email`} type="email" value={email} disabled={!!user} onChange={(e) => setEmail(e.target.value)} aria-invalid={at("email").length > 0} />
          <Err field="email" />
        </div>
        <div className="field">
          <label htmlFor={`${idp}-name`}>Name</label>
          <input id={`${idp}-name`} value={name} onChange={(e) => setName(e.target.value)} aria-invalid={at("name").length > 0} />
          <Err field="name" />
        </div>
      </div>
      <div className="row-fields">
        <div className="field">
          <label htmlFor={`${idp}-role`}>Role</label>
          <select id={`${idp}-role`} value={role} onChange={(e) => setRole(e.target.value as Role)} aria-invalid={at("role").length > 0}>
            {ROLES.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
          <p className="hint">{ROLE_HELP[role]}</p>
          <Err field="role" />
        </div>
        <div className="field">
          <label htmlFor={`${idp}-groups`}>Groups</label>
          <input id={`${idp}-groups`} placeholder="finance, legal" value={groups} onChange={(e) => setGroups(e.target.value)} aria-invalid={at("groups").length > 0} />
          <p className="hint">Comma-separated. Approvals can be assigned to a group.</p>
          <Err field="groups" />
        </div>
      </div>
      <div className="row-fields">
        <div className="field">
          <label htmlFor={`${idp}-password`}>{user ? "New password" : "Password"}</label>
          <input
            id={`${idp}-password`}
            type="password"
            autoComplete="new-password"
            placeholder={user ? "unchanged" : "none: API tokens only"}
            value={password}
            onChange={(e) => setPassword(e.target.value)}
            aria-invalid={at("password").length > 0}
          />
          <p className="hint">8 to 256 characters.{user ? " Setting one ends their sessions." : ""}</p>
          <Err field="password" />
        </div>
        {user && (
          <div className="field check">
            <label>
              <input type="checkbox" id={`${idp}-disabled`} checked={disabled} onChange={(e) => setDisabled(e.target.checked)} /> Disabled
            </label>
            <p className="hint">A disabled user cannot sign in; their sessions end and their tokens stop working.</p>
            <Err field="disabled" />
          </div>
        )}
      </div>
      <FormErrors other={other} error={error} />
      <div className="row-buttons">
        <button type="submit" className="btn primary" disabled={busy}>
          {busy ? "Saving…" : user ? "Save" : "Create user"}
        </button>
        <button type="button" className="btn ghost" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
