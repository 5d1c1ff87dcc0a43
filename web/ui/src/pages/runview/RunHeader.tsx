// RunHeader is the run view's bar: the flow and version, the run's status,
// whether its events come live, and what may be done to the run (pause,
// resume, migrate, cancel, cancel and undo).
import { api, can, type Flow, type FlowGraph, type Me, type Run } from "../../api";
import { Status } from "../../components/common";
import { isCompensation } from "../../graph";
import { Link } from "../../router";
import { MIGRATABLE } from "./Migrate";

export function RunHeader({
  run,
  flow,
  version,
  live,
  me,
  busy,
  migrating,
  shownGraph,
  onMigrate,
  control,
  act,
}: {
  run: Run;
  flow: Flow | null;
  version: number | null;
  live: boolean;
  me: Me | null;
  busy: string | null;
  migrating: boolean;
  shownGraph: FlowGraph | null;
  // onMigrate opens or closes the migrate form.
  onMigrate: () => void;
  control: (action: "pause" | "resume") => Promise<void>;
  act: (fn: () => Promise<unknown>, what?: string) => Promise<void>;
}) {
  return (
    <div className="editor-bar">
      <div className="run-title">
        <h1>
          {flow ? <Link to={`/flows/${flow.id}${version && version !== flow.version.number ? `?version=${version}` : ""}`}>{flow.name}</Link> : "Run"}
          {version ? <span className="muted"> v{version}</span> : null}
        </h1>
        <span className="mono muted">{run.id}</span>
      </div>
      <Status status={run.status} />
      <span className={`live ${live ? "on" : ""}`} aria-live="polite">
        {live ? "● live" : "○ reconnecting…"}
      </span>
      <div className="bar-actions">
        {run.entity_id && flow?.board_id && (
          <Link className="btn ghost" to={`/boards/${flow.board_id}?entity=${run.entity_id}`}>
            Entity
          </Link>
        )}
        {can(me, "admin") && (
          <Link className="btn ghost" to={`/audit?target=${encodeURIComponent(`run:${run.id}`)}`} data-link="audit" title="Who started, decided and changed this run">
            Audit trail
          </Link>
        )}
        {run.status === "running" && can(me, "operate") && (
          <button
            type="button"
            className="btn"
            data-action="pause"
            disabled={busy !== null}
            title="Nothing new starts until you resume; steps already running finish and their results are kept"
            onClick={() => void control("pause")}
          >
            {busy === "pause" ? "Pausing…" : "Pause"}
          </button>
        )}
        {run.status === "paused" && can(me, "operate") && (
          <button
            type="button"
            className="btn primary"
            data-action="resume"
            disabled={busy !== null}
            title="Start what became ready while the run was paused, and go on"
            onClick={() => void control("resume")}
          >
            {busy === "resume" ? "Resuming…" : "Resume"}
          </button>
        )}
        {MIGRATABLE.includes(run.status) && can(me, "operate") && (
          <button
            type="button"
            className="btn"
            data-action="migrate"
            aria-expanded={migrating}
            title="Move this run onto another version of its flow"
            onClick={onMigrate}
          >
            Migrate…
          </button>
        )}
        {(run.status === "running" || run.status === "paused" || run.status === "failed" || run.status === "queued") && can(me, "operate") && (
          <button
            type="button"
            className="btn danger"
            data-action="cancel"
            title={run.status === "failed" ? "Abandon this failed run instead of retrying it" : undefined}
            onClick={() => {
              if (confirm("Cancel this run? Nodes still running are cancelled and nothing else fires.")) void act(() => api("POST", `/runs/${run.id}/cancel`));
            }}
          >
            Cancel run
          </button>
        )}
        {(run.status === "running" || run.status === "paused" || run.status === "failed") &&
          !run.compensation &&
          can(me, "operate") &&
          !!shownGraph?.edges.some((e) => isCompensation(e.data as any)) && (
            <button
              type="button"
              className="btn danger"
              data-action="cancel-compensate"
              title="Cancel, then run the undo steps of the completed steps, the last completed first"
              onClick={() => {
                if (confirm("Cancel this run and undo its completed steps? Their undo steps run one by one, the last completed first."))
                  void act(() => api("POST", `/runs/${run.id}/cancel`, { compensate: true }), "Could not cancel the run");
              }}
            >
              Cancel and undo
            </button>
          )}
      </div>
    </div>
  );
}
