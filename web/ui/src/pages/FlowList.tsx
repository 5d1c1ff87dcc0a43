import { api, can, currentMe, type Flow, type Run } from "../api";
import { Link } from "../router";
import { ago, Empty, ErrorBox, Spinner, Status, useLoad } from "../components/common";

// LastRun is a flow's newest run: its status and when it started.
function LastRun({ flowId }: { flowId: string }) {
  const { data, error } = useLoad(() => api<{ runs: Run[] }>("GET", `/runs?flow_id=${flowId}&limit=1`), [flowId]);
  if (error) return <span className="muted">—</span>;
  if (!data) return <span className="muted">…</span>;
  const r = data.runs[0];
  if (!r) return <span className="muted">never run</span>;
  return (
    <Link to={`/runs/${r.id}`} className="last-run" data-last-run={r.status} title={r.created_at}>
      <Status status={r.status} /> {ago(r.created_at)}
    </Link>
  );
}

export function FlowList() {
  const { data, error, loading, reload } = useLoad(() => api<{ flows: Flow[] }>("GET", "/flows"), []);
  return (
    <section className="page">
      <div className="page-head">
        <h1>Flows</h1>
        {can(currentMe().me, "edit") && (
          <Link to="/flows/new" className="btn primary">
            New flow
          </Link>
        )}
      </div>
      <ErrorBox error={error} onRetry={reload} />
      {loading && <Spinner label="Loading flows…" />}
      {data && data.flows.length === 0 && (
        <Empty title="No flows yet">
          <p>A flow is a graph of steps: workers that call your services, approvals by people, and parallel fan-outs.</p>
          {can(currentMe().me, "edit") && (
            <Link to="/flows/new" className="btn primary">
              Draw your first flow
            </Link>
          )}
        </Empty>
      )}
      {data && data.flows.length > 0 && (
        <div className="table-wrap">
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Version</th>
                <th scope="col">Updated</th>
                <th scope="col">Last run</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {data.flows.map((f) => (
                <tr key={f.id}>
                  <td>
                    <Link to={`/flows/${f.id}`}>{f.name}</Link>
                  </td>
                  <td>v{f.version.number}</td>
                  <td title={f.updated_at}>{ago(f.updated_at)}</td>
                  <td>{can(currentMe().me, "read") ? <LastRun flowId={f.id} /> : "—"}</td>
                  <td className="actions">
                    <Link to={`/runs?flow_id=${f.id}`}>Runs</Link>
                    {" · "}
                    <Link to={`/flows/${f.id}/triggers`} data-link="triggers">
                      Triggers
                    </Link>
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
