import { useState, type FormEvent } from "react";
import { api, ApiError, type Run, type Version } from "../../api";
import { ago } from "../../components/common";
import { refusal } from "./NodeActions";

// The run statuses a run is migrated from (POST /runs/{id}/migrate).
export const MIGRATABLE: Run["status"][] = ["running", "paused", "failed"];

// Migrate moves a run onto another version of its flow (POST
// /runs/{id}/migrate {"version": n}), picked from the flow's versions; a
// refusal (409) is shown with the server's words and, when the version
// lacks steps the run has started, their list.
export function Migrate(props: {
  run: Run;
  versions: Version[];
  current: number | null;
  onClose: () => void;
  onDone: (r: Run, version: number) => void;
  onRefused: () => void;
}) {
  const { run, versions, current } = props;
  const others = [...versions].sort((a, b) => b.number - a.number).filter((v) => v.number !== current);
  const [pick, setPick] = useState<string>(others[0] ? String(others[0].number) : "");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [missing, setMissing] = useState<string[]>([]);

  async function send(e: FormEvent) {
    e.preventDefault();
    const n = Number(pick);
    if (!n) return;
    setBusy(true);
    setError(null);
    setMissing([]);
    try {
      const r = await api<Run>("POST", `/runs/${run.id}/migrate`, { version: n });
      props.onDone(r, n);
    } catch (err) {
      setError(`Not migrated: ${refusal(err)}`);
      const m = err instanceof ApiError ? err.info.missing_nodes : undefined;
      setMissing(Array.isArray(m) ? m.map(String) : []);
      props.onRefused();
    } finally {
      setBusy(false);
    }
  }

  return (
    <form className="migrate-form" aria-label="Migrate this run" onSubmit={send}>
      <h3>Migrate to another version</h3>
      <p className="small">
        The run goes on under the version you pick{current ? ` instead of v${current}` : ""}: steps already done keep their results, steps that version adds start
        when what they wait for is done, and steps it drops are removed if they never started. Every step the run has started must be in that version, with the same
        type.
      </p>
      {others.length === 0 ? (
        <p className="muted" data-no-versions>
          This flow has no other version. Save a change to the flow to make one.
        </p>
      ) : (
        <div className="row">
          <label htmlFor="migrate-version">Version</label>
          <select
            id="migrate-version"
            value={pick}
            disabled={busy}
            onChange={(e) => {
              setPick(e.target.value);
              setError(null);
              setMissing([]);
            }}
          >
            {others.map((v) => (
              <option key={v.id} value={v.number}>
                v{v.number}
                {v.message ? ` — ${v.message}` : ""} ({ago(v.created_at)})
              </option>
            ))}
          </select>
          <button type="submit" className="btn primary" data-action="confirm-migrate" disabled={busy || !pick}>
            {busy ? "Migrating…" : `Migrate to v${pick}`}
          </button>
          <button type="button" className="btn" disabled={busy} onClick={props.onClose}>
            Cancel
          </button>
        </div>
      )}
      {error && (
        <div className="field-error" role="alert" data-server-error>
          <p>{error}</p>
          {missing.length > 0 && (
            <>
              <p>
                v{pick} lacks {missing.length === 1 ? "this step" : "these steps"} the run has started (or has {missing.length === 1 ? "it" : "them"} as another type or in
                another parallel branch):
              </p>
              <ul className="missing-nodes" data-missing-nodes aria-label="Missing steps">
                {missing.map((m) => (
                  <li key={m} className="mono">
                    {m}
                  </li>
                ))}
              </ul>
            </>
          )}
        </div>
      )}
    </form>
  );
}
