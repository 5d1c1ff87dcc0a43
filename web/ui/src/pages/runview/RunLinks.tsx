// The links between a sub-flow run and its parent: the child run a
// SubFlow step started, the parent run a sub-flow run was started by.
import { useEffect, useState } from "react";
import { api, type Flow, type Run } from "../../api";
import { Status } from "../../components/common";
import { Link } from "../../router";

// again when refresh changes.
export function useRunLabel(runId: string, refresh = ""): { run: Run | null; flowName: string | null } {
  const [run, setRun] = useState<Run | null>(null);
  const [flowName, setFlowName] = useState<string | null>(null);
  useEffect(() => {
    let gone = false;
    api<Run>("GET", `/runs/${runId}`).then(
      (r) => {
        if (gone) return;
        setRun(r);
        api<Flow>("GET", `/flows/${r.flow_id}`).then(
          (f) => !gone && setFlowName(f.name),
          () => undefined,
        );
      },
      () => undefined,
    );
    return () => {
      gone = true;
    };
  }, [runId, refresh]);
  return { run, flowName };
}

// ChildRun links to the run a SubFlow step started, with its flow and
// status (read again when the step's status changes).
export function ChildRun({ id, refresh }: { id: string; refresh: string }) {
  const { run, flowName } = useRunLabel(id, refresh);
  return (
    <>
      <Link to={`/runs/${id}`} className="child-run-link" data-link="child-run" title="Open the run this step started">
        {flowName ? `${flowName} run` : "Child run"} →
      </Link>
      {run && (
        <>
          {" "}
          <Status status={run.status} />
        </>
      )}
      {/* The whole id: runs started together share their first digits (UUIDv7). */}
      <div className="mono small muted">{id}</div>
    </>
  );
}

// ParentCrumb leads a sub-flow run back to the run and the SubFlow step
// that started it.
export function ParentCrumb({ parentRunId, parentKey }: { parentRunId: string; parentKey: string }) {
  const { flowName } = useRunLabel(parentRunId);
  const to = `/runs/${parentRunId}${parentKey ? `?key=${encodeURIComponent(parentKey)}` : ""}`;
  return (
    <nav className="crumbs" aria-label="Parent run" data-parent-run={parentRunId} data-parent-key={parentKey}>
      <span className="muted">Sub-flow run of</span>{" "}
      <Link to={`/runs/${parentRunId}`} data-link="parent-run">
        {flowName ? `${flowName} run` : "a run"}
      </Link>{" "}
      <span className="mono small muted">{parentRunId}</span>
      {parentKey && (
        <>
          <span className="crumb-sep" aria-hidden="true">
            {" "}
            ›{" "}
          </span>
          <Link to={to} className="mono" data-link="parent-step">
            {parentKey}
          </Link>
        </>
      )}
    </nav>
  );
}
