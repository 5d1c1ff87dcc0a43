import { useEffect } from "react";
import { api, type Queue } from "../api";
import { ago, duration, Empty, ErrorBox, Spinner, useLoad } from "../components/common";

// A task queue as GET /api/v1/queues answers it.
type QueueInfo = Queue;

// Queues shows the pull queues: what waits in each, what is leased, how
// long the oldest task has waited, and the workers that poll them —
// refreshed every few seconds.
export function Queues() {
  const { data, error, loading, reload } = useLoad(() => api<QueueInfo[]>("GET", "/queues"), []);
  useEffect(() => {
    const t = window.setInterval(reload, 5000);
    return () => window.clearInterval(t);
  }, [reload]);
  return (
    <section className="page">
      <div className="page-head">
        <h1>Queues</h1>
      </div>
      <p className="muted">
        A Worker step with a queue waits here until one of your workers polls it (<code>POST /api/v1/tasks/poll</code>); the worker holds it for
        its lease and calls back as a pushed worker does.
      </p>
      <ErrorBox error={error} onRetry={reload} />
      {loading && !data && <Spinner label="Loading queues…" />}
      {data && data.length === 0 && (
        <Empty title="No queues yet">
          <p>Set a Worker step to “Pull” and name a queue: it shows here once a task waits or a worker polls.</p>
        </Empty>
      )}
      {data && data.length > 0 && (
        <div className="table-wrap">
          <table className="table" aria-label="Queues">
            <thead>
              <tr>
                <th scope="col">Queue</th>
                <th scope="col">Waiting</th>
                <th scope="col">Leased</th>
                <th scope="col">Oldest waiting</th>
                <th scope="col">Workers</th>
              </tr>
            </thead>
            <tbody>
              {data.map((q) => (
                <tr key={q.name} data-queue={q.name}>
                  <td className="mono">{q.name}</td>
                  <td data-pending>{q.pending}</td>
                  <td data-leased>{q.leased}</td>
                  <td>{q.pending > 0 ? duration(Math.round(q.oldest_pending_seconds)) : "—"}</td>
                  <td>
                    {q.workers.length === 0 ? (
                      <span className="muted">none has polled</span>
                    ) : (
                      <ul className="plain-list">
                        {q.workers.map((w) => (
                          <li key={w.id} data-worker={w.id}>
                            <span className="mono">{w.id}</span>{" "}
                            <span className="muted" title={w.last_poll_at}>
                              polled {ago(w.last_poll_at)}
                              {w.leased > 0 ? ` · holds ${w.leased}` : ""}
                            </span>
                          </li>
                        ))}
                      </ul>
                    )}
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
