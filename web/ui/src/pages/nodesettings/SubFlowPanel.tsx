// Settings of a SubFlow node (runs another flow as one step): the flow,
// picked from the list of flows (its id is stored in data.flow), the
// version (a number, or "latest", pinned when this flow is saved) and
// whether the run's entity goes along (passEntity, default true).
import { useEffect, useState } from "react";
import { describe, listAll, type Version } from "../../api";
import { useFlowList } from "../../flows";
import { subflowVersion } from "../../graph";
import { Link } from "../../router";
import { Field, ServerProblems, type FieldsProps, type PanelProps } from "./shared";

export const SUBFLOW_FIELDS = ["flow", "version", "passEntity"];

export function SubFlowFields({
  data,
  onChange,
  problemsAt,
  nodeId,
  selfId,
}: FieldsProps & {
  // selfId: the flow being edited (null for a new one): a flow cannot run itself.
  selfId: string | null;
}) {
  const { flows, error, reload } = useFlowList();
  // The list is read again when the form opens: a flow made meanwhile shows.
  useEffect(() => reload(), [reload]);
  const ref = typeof data.flow === "string" ? data.flow.trim() : "";
  const picked = flows?.find((f) => f.id === ref) ?? flows?.find((f) => f.name === ref) ?? null;
  const others = (flows ?? []).filter((f) => f.id !== selfId || f.id === picked?.id);
  const version = subflowVersion(data);

  // The versions of the picked flow.
  const [versions, setVersions] = useState<Version[] | null>(null);
  const [versionsError, setVersionsError] = useState<string | null>(null);
  const pickedId = picked?.id ?? null;
  useEffect(() => {
    setVersions(null);
    setVersionsError(null);
    if (!pickedId) return;
    let gone = false;
    listAll<Version>(`/flows/${pickedId}/versions`, "versions").then(
      (vs) => !gone && setVersions([...vs].sort((a, b) => b.number - a.number)),
      (err) => !gone && setVersionsError(describe(err)),
    );
    return () => {
      gone = true;
    };
  }, [pickedId]);

  const put = (obj: Record<string, any>, k: string, v: any) => {
    const next = { ...obj };
    if (v === undefined || v === "") delete next[k];
    else next[k] = v;
    return next;
  };
  const pickFlow = (id: string) => {
    // Another flow's version numbers mean nothing here: back to latest.
    const next = put(put(data, "flow", id), "version", undefined);
    onChange(next);
  };
  const flowProblems = problemsAt("flow");
  const versionProblems = problemsAt("version");
  const latest = picked?.version?.number;

  return (
    <fieldset className="subflow-fields" aria-label="Sub-flow">
      <legend>Sub-flow</legend>
      <Field label="Flow" id="node-subflow" hint="The flow this step runs; the step's input is the child run's input and the child's output is the step's output.">
        <div className="row">
          <select
            id="node-subflow"
            value={picked?.id ?? ref}
            aria-invalid={flowProblems.some((p) => !p.stale) || (!!flows && !!ref && !picked)}
            onChange={(e) => pickFlow(e.target.value)}
          >
            <option value="">{flows ? "Choose a flow…" : "Loading flows…"}</option>
            {ref && flows && !picked && <option value={ref}>{ref} (not found)</option>}
            {others.map((f) => (
              <option key={f.id} value={f.id}>
                {f.name} (v{f.version?.number})
              </option>
            ))}
          </select>
          {picked && (
            <Link className="btn ghost small" to={`/flows/${picked.id}`} title={`Open ${picked.name} in the editor`} data-link="subflow">
              Open
            </Link>
          )}
        </div>
      </Field>
      {error != null && (
        <p className="field-error" role="alert">
          The list of flows could not be read: {describe(error)}{" "}
          <button type="button" className="linklike" onClick={reload}>
            Try again
          </button>
        </p>
      )}
      {flows && others.length === 0 && <p className="hint">There is no other flow yet: save the flow to run as a step first.</p>}
      {flows && ref && !picked && !flowProblems.length && (
        <p className="field-error" role="alert" data-check="local">
          There is no flow {ref}: choose one from the list.
        </p>
      )}
      <ServerProblems problems={flowProblems} id={nodeId} />
      <Field label="Version" id="node-subflow-version" hint="Latest is pinned when this flow is saved: a running run never sees the sub-flow change under it.">
        <select
          id="node-subflow-version"
          value={String(version)}
          disabled={!ref}
          aria-invalid={versionProblems.some((p) => !p.stale)}
          onChange={(e) => onChange(put(data, "version", e.target.value === "latest" ? undefined : Number(e.target.value)))}
        >
          <option value="latest">latest{latest ? ` (v${latest} now)` : ""}</option>
          {version !== "latest" && !versions?.some((v) => v.number === version) && <option value={String(version)}>v{version}</option>}
          {(versions ?? []).map((v) => (
            <option key={v.id} value={String(v.number)}>
              v{v.number}
              {v.message ? ` — ${v.message}` : ""}
            </option>
          ))}
        </select>
      </Field>
      {versionsError && (
        <p className="field-error" role="alert">
          The versions could not be read: {versionsError}
        </p>
      )}
      <ServerProblems problems={versionProblems} id={nodeId} />
      <div className="field check">
        <label htmlFor="node-pass-entity">
          <input
            id="node-pass-entity"
            type="checkbox"
            checked={data.passEntity !== false}
            onChange={(e) => onChange(put(data, "passEntity", e.target.checked ? undefined : false))}
          />{" "}
          Pass the run's entity to the child run
        </label>
      </div>
      <ServerProblems problems={problemsAt("passEntity")} id={nodeId} />
    </fieldset>
  );
}

export function SubFlowPanel({ node, data, onChange, problemsAt, flowId }: PanelProps) {
  return <SubFlowFields data={data} onChange={onChange} problemsAt={problemsAt} nodeId={node.id} selfId={flowId} />;
}
