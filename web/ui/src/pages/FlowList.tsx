import { api, can, currentMe, type Flow } from "../api";
import { Link } from "../router";
import { ago, Empty, ErrorBox, Spinner, useLoad } from "../components/common";

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
