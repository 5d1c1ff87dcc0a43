// RunBanners are what the run view says above the canvas: the migrate
// form and its outcome, an action's refusal, a paused or queued run, a
// compensation, the run's error, its variables, a flow the caller may
// not read.
import type { Compensation, NodeState, Run, StreamEvent, Version } from "../../api";
import { ago } from "../../components/common";
import { Link } from "../../router";
import { RunId } from "../RunList";
import { Migrate, MIGRATABLE } from "./Migrate";

export function RunBanners({
  run,
  events,
  byNode,
  versions,
  version,
  migrating,
  migrated,
  actionError,
  flowHidden,
  setMigrating,
  onMigrated,
  fetchRun,
}: {
  run: Run;
  events: StreamEvent[];
  byNode: Record<string, NodeState[]>;
  versions: Version[];
  version: number | null;
  migrating: boolean;
  migrated: number | null;
  actionError: string | null;
  flowHidden: boolean;
  setMigrating: (v: boolean) => void;
  onMigrated: (r: Run, n: number) => void;
  fetchRun: () => Promise<void>;
}) {
  const pausedAt = run.status === "paused" ? [...events].reverse().find((e) => e.type === "run.paused")?.created_at : undefined;
  // A queued run's run.queued event names the run it waits behind.
  const queuedEv = run.status === "queued" ? [...events].reverse().find((e) => e.type === "run.queued") : undefined;
  const behind: string | undefined = typeof queuedEv?.payload?.behind === "string" ? queuedEv.payload.behind : undefined;
  return (
    <>
      {migrating && MIGRATABLE.includes(run.status) && (
        <Migrate
          run={run}
          versions={versions}
          current={version}
          onClose={() => setMigrating(false)}
          onDone={onMigrated}
          onRefused={fetchRun}
        />
      )}
      {migrated !== null && (
        <div className="banner ok" role="status" data-migrated={migrated}>
          Moved to version {migrated}. Steps this version adds start as soon as what they wait for is done.
        </div>
      )}
      {actionError && (
        <div className="error-box" role="alert">
          {actionError}
        </div>
      )}
      {run.status === "paused" && (
        <div className="banner paused" role="status" data-paused>
          <strong>
            <span className="pause-icon" aria-hidden="true" />
            Paused{pausedAt ? ` ${ago(pausedAt)}` : ""}.
          </strong> Nothing new starts while the run is paused: steps already running finish and their
          results are kept, and what they make ready waits. Resume to go on.
        </div>
      )}
      {run.status === "queued" && (
        <div className="banner queued" role="status" data-queued>
          <strong>
            Queued{queuedEv ? ` ${ago(queuedEv.created_at)}` : ""}.
          </strong>{" "}
          This run waits its turn: its entity already has a run of this flow going
          {behind ? (
            <>
              {" — "}
              <Link to={`/runs/${behind}`} data-behind={behind}>
                <RunId id={behind} />
              </Link>
            </>
          ) : null}
          . It begins by itself when that run ends (the flow's entity concurrency is “queue”); none of its steps has started yet.
        </div>
      )}
      {run.compensation && <CompensationBanner comp={run.compensation} byNode={byNode} />}
      {run.error &&
        (() => {
          const b = runEnd(run.status, run.error);
          return (
            <div className={b.failed ? "error-box" : "banner subtle"} data-run-end={run.status}>
              {b.text}
            </div>
          );
        })()}
      {run.variables && Object.keys(run.variables).length > 0 && (
        <details className="run-variables" data-run-variables>
          <summary>Variables ({Object.keys(run.variables).length})</summary>
          <dl>
            {Object.entries(run.variables).map(([k, v]) => (
              <div key={k} data-variable={k}>
                <dt className="mono">vars.{k}</dt>
                <dd className="mono">{JSON.stringify(v)}</dd>
              </div>
            ))}
          </dl>
        </details>
      )}
      {flowHidden && (
        <p className="banner subtle" data-flow-hidden>
          Your role may not read this run's flow: its steps are shown without their connections.
        </p>
      )}
    </>
  );
}

// CompensationBanner says where a run's compensation is: the steps it
// undoes, in the order their undo steps run, and how it ended.
function CompensationBanner({ comp, byNode }: { comp: Compensation; byNode: Record<string, NodeState[]> }) {
  const head =
    comp.state === "compensating"
      ? `Compensating${comp.reason === "cancelled" ? " (cancelled with undo)" : ""}: undoing ${comp.steps.length} completed step${comp.steps.length === 1 ? "" : "s"}, the last completed first.`
      : comp.state === "compensated"
        ? `Compensated: ${comp.steps.length ? `${comp.steps.length} completed step${comp.steps.length === 1 ? " was" : "s were"} undone` : "there was no completed step to undo"}.`
        : comp.state === "failed"
          ? `Compensation stopped: undo step ${comp.failed_node} failed. Retry it (or complete it by hand) to go on undoing.`
          : "Compensation interrupted: the run was cancelled or passed its deadline while undoing.";
  return (
    <div className="banner compensating" role="status" data-compensation={comp.state}>
      <strong>{head}</strong>
      {comp.steps.length > 0 && (
        <ol>
          {comp.steps.map((s) => (
            <li key={s.undo} data-undo-step={s.undo}>
              <span className="mono">{s.undo}</span> undoes <span className="mono">{s.step}</span> — {byNode[s.undo]?.[0]?.status ?? "pending"}
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}

// runEnd words a run's error for its banner: a failure says why; a run an
// operator cancelled did not fail (its error is "cancelled"), nor is a
// run going again after one.
export function runEnd(status: string, error: string): { failed: boolean; text: string } {
  if (status === "cancelled") return { failed: false, text: error === "cancelled" ? "Run cancelled." : `Run cancelled: ${error}` };
  if (status === "failed") return { failed: true, text: `Run failed: ${error === "deadline" ? "its deadline passed" : error}` };
  return { failed: false, text: `Last error: ${error}` };
}
