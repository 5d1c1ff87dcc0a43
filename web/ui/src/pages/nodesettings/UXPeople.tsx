// Who may decide a UX step.
import { useState } from "react";
import { num, ServerProblems, type FieldsProps } from "./shared";

// The UX settings of who decides and what they answer.
export const UX_PEOPLE_FIELDS = ["assignees", "requiredApprovals", "rejectPolicy", "separationOfDuties", "form"];

// splitList reads a comma- or newline-separated list.
function splitList(s: string): string[] {
  return s
    .split(/[,\n]/)
    .map((x) => x.trim())
    .filter(Boolean);
}

// UXPeople edits who may decide a UX step: its assignees (anyone; people
// and groups; or an expression over the input that names them), how many
// must agree (requiredApprovals, N of M), whether one reject is enough,
// and whether the person who started the run is kept out.
export function UXPeople({
  data,
  onChange,
  problemsAt,
}: Omit<FieldsProps, "nodeId">) {
  const a = data.assignees;
  const initial: "anyone" | "list" | "expr" = typeof a === "string" ? "expr" : a && typeof a === "object" ? "list" : "anyone";
  const [mode, setMode] = useState(initial);
  const [users, setUsers] = useState<string>(Array.isArray(a?.users) ? a.users.join(", ") : "");
  const [groups, setGroups] = useState<string>(Array.isArray(a?.groups) ? a.groups.join(", ") : "");
  const [expr, setExpr] = useState<string>(typeof a === "string" ? a : "");
  const set = (patch: Record<string, any>) => {
    const next = { ...data };
    for (const [k, v] of Object.entries(patch)) {
      if (v === undefined) delete next[k];
      else next[k] = v;
    }
    onChange(next);
  };
  const listOf = (u: string, g: string) => {
    const us = splitList(u);
    const gs = splitList(g);
    if (!us.length && !gs.length) return { users: [] as string[] }; // the server says it names no one
    return { ...(us.length ? { users: us } : {}), ...(gs.length ? { groups: gs } : {}) };
  };
  const choose = (m: typeof mode) => {
    setMode(m);
    set({ assignees: m === "anyone" ? undefined : m === "expr" ? expr || undefined : listOf(users, groups) });
  };
  const required = typeof data.requiredApprovals === "number" ? data.requiredApprovals : undefined;
  const requiredBad = required !== undefined && (!Number.isInteger(required) || required < 1);
  const listed = mode === "list" ? splitList(users).length : 0;
  const tooMany = mode === "list" && !splitList(groups).length && required !== undefined && required > listed;
  const badEmails = mode === "list" ? splitList(users).filter((u) => !/^[^@\s]+@[^@\s]+$/.test(u)) : [];
  return (
    <fieldset className="ux-people">
      <legend>Who decides</legend>
      <div className="tabs" role="radiogroup" aria-label="Assigned to">
        {(
          [
            ["anyone", "Anyone"],
            ["list", "People and groups"],
            ["expr", "From the input"],
          ] as const
        ).map(([m, label]) => (
          <label key={m} className={mode === m ? "active" : ""}>
            <input type="radio" name="node-assign-mode" value={m} checked={mode === m} onChange={() => choose(m)} data-assign-mode={m} /> {label}
          </label>
        ))}
      </div>
      {mode === "anyone" && <p className="hint">Any approver (or admin) may decide.</p>}
      {mode === "list" && (
        <>
          <div className="field">
            <label htmlFor="node-assign-users">People (emails)</label>
            <textarea
              id="node-assign-users"
              rows={2}
              placeholder="ann@example.com, bob@example.com"
              value={users}
              aria-invalid={badEmails.length > 0}
              onChange={(e) => {
                setUsers(e.target.value);
                set({ assignees: listOf(e.target.value, groups) });
              }}
            />
            {badEmails.length > 0 && (
              <p className="field-error" role="alert" data-check="local">
                Not an email: {badEmails.join(", ")}
              </p>
            )}
          </div>
          <div className="field">
            <label htmlFor="node-assign-groups">Groups</label>
            <input
              id="node-assign-groups"
              placeholder="finance, legal"
              value={groups}
              onChange={(e) => {
                setGroups(e.target.value);
                set({ assignees: listOf(users, e.target.value) });
              }}
            />
            <p className="hint">Comma-separated. A member of any of them may decide.</p>
          </div>
        </>
      )}
      {mode === "expr" && (
        <div className="field">
          <label htmlFor="node-assign-expr">Assignees expression</label>
          <input
            id="node-assign-expr"
            className="mono"
            placeholder="input.owner_email"
            value={expr}
            onChange={(e) => {
              setExpr(e.target.value);
              set({ assignees: e.target.value.trim() ? e.target.value : undefined });
            }}
          />
          <p className="hint">
            Evaluated over <code>input</code>, <code>run</code> and <code>entity</code> when the step starts waiting: an email, a list of emails, or{" "}
            <code>{"{users: [...], groups: [...]}"}</code>.
          </p>
        </div>
      )}
      <ServerProblems problems={problemsAt("assignees")} id="" />
      <div className="field">
        <label htmlFor="node-required">Approvals needed</label>
        <input
          id="node-required"
          type="number"
          min={1}
          step={1}
          placeholder="1"
          value={required ?? ""}
          aria-invalid={requiredBad || tooMany}
          onChange={(e) => set({ requiredApprovals: num(e.target.value) === undefined || isNaN(num(e.target.value)!) ? undefined : num(e.target.value) })}
        />
        {requiredBad ? (
          <p className="field-error" role="alert" data-check="local">
            A whole number, 1 or more.
          </p>
        ) : tooMany ? (
          <p className="field-error" role="alert" data-check="local">
            {required} approvals from {listed} {listed === 1 ? "person" : "people"}: it could never complete.
          </p>
        ) : (
          <p className="hint">
            {required && required > 1 ? `${required} different people must choose the same outcome.` : "One person's decision is enough."}
          </p>
        )}
        <ServerProblems problems={problemsAt("requiredApprovals")} id="" />
      </div>
      {required !== undefined && required > 1 && (
        <div className="field">
          <label htmlFor="node-reject-policy">A reject</label>
          <select id="node-reject-policy" value={data.rejectPolicy ?? "any"} onChange={(e) => set({ rejectPolicy: e.target.value === "any" ? undefined : e.target.value })}>
            <option value="any">decides at once (one reject is enough)</option>
            <option value="majority">needs as many votes as an approval</option>
          </select>
          <ServerProblems problems={problemsAt("rejectPolicy")} id="" />
        </div>
      )}
      <div className="field check">
        <label>
          <input
            type="checkbox"
            id="node-sod"
            checked={data.separationOfDuties === true}
            onChange={(e) => set({ separationOfDuties: e.target.checked ? true : undefined })}
          />{" "}
          Separation of duties
        </label>
        <p className="hint">The person who started the run may not decide this step (admins included).</p>
        <ServerProblems problems={problemsAt("separationOfDuties")} id="" />
      </div>
    </fieldset>
  );
}
