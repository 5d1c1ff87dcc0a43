// useRun reads a run, and the flow and version of it the run follows.
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { api, ApiError, listAll, type Flow, type FlowGraph, type Run, type Version } from "../../api";
import { loadNodeTypes } from "../../nodetypes";
import { stepsOf } from "./runState";

export function useRun(runId: string) {
  const [run, setRun] = useState<Run | null>(null);
  const [graph, setGraph] = useState<FlowGraph | null>(null);
  const [flow, setFlow] = useState<Flow | null>(null);
  const [version, setVersion] = useState<number | null>(null);
  const [versions, setVersions] = useState<Version[]>([]);
  const [error, setError] = useState<unknown>(null);
  // flowHidden: the caller may not read the flow (an approver reading a
  // run they are part of): the canvas shows the run's steps without edges.
  const [flowHidden, setFlowHidden] = useState(false);

  // Reads of the run may answer out of order (the first read and the
  // refresh an event asks for, under load): an answer to a read older than
  // the one shown is dropped, or the view would stay a step behind (a Wait
  // never seen sleeping) until the next event.
  const asked = useRef(0);
  const answered = useRef(0);
  const readRun = useCallback(
    async (current: () => boolean) => {
      const n = ++asked.current;
      try {
        const r = await api<Run>("GET", `/runs/${runId}`);
        if (!current() || n < answered.current) return;
        answered.current = n;
        setRun(r);
        setError(null);
      } catch (err) {
        if (!current() || n < answered.current) return;
        setError(err);
      }
    },
    [runId],
  );
  const fetchRun = useCallback(() => readRun(() => true), [readRun]);

  useEffect(() => {
    let cancelled = false;
    void readRun(() => !cancelled);
    return () => {
      cancelled = true;
    };
  }, [readRun]);

  // The flow and the run's version of it, read again when the run moves
  // to another version (a migration).
  const flowId = run?.flow_id;
  const versionId = run?.flow_version_id;
  useEffect(() => {
    if (!flowId || !versionId) return;
    let cancelled = false;
    (async () => {
      try {
        const [f, vs] = await Promise.all([api<Flow>("GET", `/flows/${flowId}`), listAll<Version>(`/flows/${flowId}/versions`, "versions"), loadNodeTypes()]);
        const v = vs.find((x) => x.id === versionId);
        const full = v ? await api<Version>("GET", `/flows/${flowId}/versions/${v.number}`) : null;
        if (cancelled) return;
        setFlow(f);
        setVersions(vs);
        setVersion(v?.number ?? null);
        setGraph(full?.graph ?? f.graph ?? { nodes: [], edges: [] });
      } catch (err) {
        if (cancelled) return;
        if (err instanceof ApiError && (err.status === 403 || err.status === 404)) setFlowHidden(true);
        else setError(err);
      }
    })();
    return () => {
      cancelled = true;
    };
  }, [flowId, versionId]);
  const shownGraph = useMemo(() => graph ?? (flowHidden && run ? stepsOf(run) : null), [graph, flowHidden, run]);
  return { run, setRun, graph, flow, version, versions, error, flowHidden, fetchRun, shownGraph };
}
