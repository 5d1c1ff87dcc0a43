import { useEffect, useState } from "react";
import { api, stream, type Flow, type Run } from "../api";
import { ago, Empty, ErrorBox, Spinner, Status, useLoad, useThrottled } from "../components/common";
import { Link, navigate } from "../router";

const STATUSES = ["", "running", "paused", "completed", "failed", "cancelled"];

export function RunList({ flowId, status }: { flowId: string | null; status: string | null }) {
  const q = new URLSearchParams();
  if (flowId) q.set("flow_id", flowId);
  if (status) q.set("status", status);
  q.set("limit", "50");
  const flows = useLoad(() => api<{ flows: Flow[] }>("GET", "/flows"), []);
  const { data, setData, error, loading, reload } = useLoad(() => api<{ runs: Run[]; next_cursor: string | null }>("GET", `/runs?${q}`), [flowId, status]);
  const [more, setMore] = useState(false);
  const refresh = useThrottled(reload, 1000);
  useEffect(
    () =>
      stream("/events", (e) => {
        if (e.type.startsWith("run.")) refresh();
      }),
    [refresh],
  );
  const names: Record<string, string> = {};
  for (const f of flows.data?.flows ?? []) names[f.id] = f.name;

  const setFilter = (k: string, v: string) => {
    const p = new URLSearchParams(location.search);
    if (v) p.set(k, v);
    else p.delete(k);
    navigate(`/runs${p.toString() ? `?${p}` : ""}`);
  };
  async function loadMore() {
    if (!data?.next_cursor) return;
    setMore(true);
    try {
      const next = await api<{ runs: Run[]; next_cursor: string | null }>("GET", `/runs?${q}&cursor=${encodeURIComponent(data.next_cursor)}`);
      setData({ runs: [...data.runs, ...next.runs], next_cursor: next.next_cursor });
    } finally {
      setMore(false);
    }
  }

  return (
    <section className="page">
      <div className="page-head">
        <h1>Runs</h1>
        <div className="filters">
          <label htmlFor="runs-flow">Flow</label>
          <select id="runs-flow" value={flowId ?? ""} onChange={(e) => setFilter("flow_id", e.target.value)}>
            <option value="">All flows</option>
            {(flows.data?.flows ?? []).map((f) => (
              <option key={f.id} value={f.id}>
                {f.name}
              </option>
            ))}
          </select>
          <label htmlFor="runs-status">Status</label>
          <select id="runs-status" value={status ?? ""} onChange={(e) => setFilter("status", e.target.value)}>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s || "Any status"}
              </option>
            ))}
          </select>
        </div>
      </div>
      <ErrorBox error={error} onRetry={reload} />
      {loading && <Spinner label="Loading runs…" />}
      {data && data.runs.length === 0 && (
        <Empty title="No runs here yet">
          <p>Start a run from a flow's page, or fire one of its triggers.</p>
          <Link to="/flows">Go to flows</Link>
        </Empty>
      )}
      {data && data.runs.length > 0 && (
        <div className="table-wrap">
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Run</th>
                <th scope="col">Flow</th>
                <th scope="col">Status</th>
                <th scope="col">Started</th>
                <th scope="col">Finished</th>
              </tr>
            </thead>
            <tbody>
              {data.runs.map((r) => (
                <tr key={r.id}>
                  <td>
                    <Link to={`/runs/${r.id}`} className="mono">
                      {r.id.slice(0, 8)}
                    </Link>
                  </td>
                  <td>{names[r.flow_id] ?? <span className="mono">{r.flow_id.slice(0, 8)}</span>}</td>
                  <td>
                    <Status status={r.status} />
                  </td>
                  <td title={r.created_at}>{ago(r.created_at)}</td>
                  <td title={r.finished_at ?? ""}>{r.finished_at && r.status !== "paused" ? ago(r.finished_at) : "—"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {data?.next_cursor && (
        <button type="button" className="btn" onClick={() => void loadMore()} disabled={more}>
          {more ? "Loading…" : "Load more"}
        </button>
      )}
    </section>
  );
}
