import { useEffect, useRef, useState } from "react";
import { api, ApiError, can, currentMe, describe, stream, type Flow, type Run, type RunStatus, type TriggerKind } from "../api";
import { Link } from "../router";
import { ago, Empty, ErrorBox, Modal, Spinner, Status, useLoad, useThrottled } from "../components/common";

// The run statuses counted, in the order shown: what is going first.
const COUNTED: RunStatus[] = ["running", "queued", "paused", "failed", "completed", "cancelled"];
const KINDS: TriggerKind[] = ["webhook", "schedule", "event", "nats", "amqp"];
const PAGE = 50;

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

// going counts a flow's runs that hold a delete: running, paused, queued.
function going(f: Flow): number {
  const c = f.run_counts;
  return c ? c.running + c.paused + c.queued : 0;
}

function runs(n: number): string {
  return `${n} ${n === 1 ? "run" : "runs"}`;
}

// RunCounts shows a flow's runs by status, each a link to those runs;
// statuses with none are left out.
function RunCounts({ flow }: { flow: Flow }) {
  const c = flow.run_counts;
  if (!c) return <span className="muted">—</span>;
  const shown = COUNTED.filter((s) => c[s] > 0);
  if (!shown.length) return <span className="muted">no runs</span>;
  return (
    <span className="run-counts">
      {shown.map((s) => {
        const capped = flow.run_counts_capped?.includes(s);
        return (
          <Link key={s} to={`/runs?flow_id=${flow.id}&status=${s}`} className={`count status status-${s}`} data-count={s} data-n={c[s]} title={`${c[s]}${capped ? " or more" : ""} ${s}`}>
            {c[s]}
            {capped ? "+" : ""} {s}
          </Link>
        );
      })}
    </span>
  );
}

// Triggers says how many triggers a flow has, of which kinds.
function Triggers({ flow }: { flow: Flow }) {
  const t = flow.triggers;
  const total = t ? KINDS.reduce((n, k) => n + (t[k] ?? 0), 0) : 0;
  const kinds = t ? KINDS.filter((k) => t[k] > 0).map((k) => `${t[k]} ${k}`) : [];
  return (
    <Link to={`/flows/${flow.id}/triggers`} data-link="triggers" data-triggers={total} title={kinds.join(", ") || "no triggers"}>
      {total === 0 ? "No triggers" : `${total} ${total === 1 ? "trigger" : "triggers"}`}
      {kinds.length > 0 && <span className="muted small"> ({kinds.join(", ")})</span>}
    </Link>
  );
}

interface Busy {
  running: number;
  paused: number;
  queued: number;
}

// DeleteDialog asks before deleting a flow. A flow with runs going is not
// deleted as such: the dialog says how many, and a role that may cancel
// runs can cancel them and delete; others are told to wait or ask.
function DeleteDialog({ flow, onClose, onDeleted }: { flow: Flow; onClose: () => void; onDeleted: () => void }) {
  const c = flow.run_counts;
  const [busy, setBusy] = useState<Busy | null>(c && going(flow) > 0 ? { running: c.running, paused: c.paused, queued: c.queued } : null);
  const [working, setWorking] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const mayCancel = can(currentMe().me, "operate");
  const n = busy ? busy.running + busy.paused + busy.queued : 0;

  async function remove(cancelRuns: boolean) {
    setWorking(true);
    setError(null);
    try {
      await api("DELETE", `/flows/${flow.id}${cancelRuns ? "?cancel_runs=true" : ""}`);
      onDeleted();
    } catch (err) {
      // A run started since the list was read: say so, and ask again.
      if (err instanceof ApiError && err.code === "flow_busy") setBusy({ running: err.info.running ?? 0, paused: err.info.paused ?? 0, queued: err.info.queued ?? 0 });
      else setError(`Not deleted: ${describe(err)}`);
    } finally {
      setWorking(false);
    }
  }

  return (
    <Modal title={`Delete flow “${flow.name}”?`} onClose={onClose}>
      <div data-delete-dialog={flow.id}>
        <p>
          The flow leaves the list and its triggers (webhooks, schedules, events, brokers) start nothing more. Its past runs stay readable under Runs.
        </p>
        {busy && n > 0 && (
          <div className="banner warn" role="alert" data-busy={n}>
            {runs(n)} of this flow {n === 1 ? "is" : "are"} still going ({busy.running} running, {busy.paused} paused, {busy.queued} queued).{" "}
            {mayCancel ? "Deleting cancels them first." : "Your role may not cancel runs: wait for them to end, or ask an operator or admin."}
          </div>
        )}
        {error && (
          <p className="field-error" role="alert">
            {error}
          </p>
        )}
        <div className="row modal-actions">
          {busy && n > 0 ? (
            mayCancel && (
              <button type="button" className="btn danger" data-action="delete-cancel-runs" disabled={working} onClick={() => void remove(true)}>
                {working ? "Deleting…" : `Cancel ${runs(n)} and delete`}
              </button>
            )
          ) : (
            <button type="button" className="btn danger" data-action="delete-confirm" disabled={working} onClick={() => void remove(false)}>
              {working ? "Deleting…" : "Delete flow"}
            </button>
          )}
          <button type="button" className="btn" onClick={onClose}>
            Keep it
          </button>
        </div>
      </div>
    </Modal>
  );
}

export function FlowList() {
  // The list a page at a time; a refresh reads again as many as are shown.
  const shown = useRef(PAGE);
  const { data, setData, error, loading, reload } = useLoad(
    () => api<{ flows: Flow[]; next_cursor: string | null }>("GET", `/flows?limit=${Math.min(shown.current, 500)}`),
    [],
  );
  const [more, setMore] = useState(false);
  const [deleting, setDeleting] = useState<Flow | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const refresh = useThrottled(reload, 2000);
  // Counts follow the runs as they start and end.
  useEffect(
    () =>
      stream("/events", (e) => {
        if (e.type.startsWith("run.")) refresh();
      }),
    [refresh],
  );
  async function loadMore() {
    if (!data?.next_cursor) return;
    setMore(true);
    try {
      const next = await api<{ flows: Flow[]; next_cursor: string | null }>("GET", `/flows?limit=${PAGE}&cursor=${encodeURIComponent(data.next_cursor)}`);
      setData({ flows: [...data.flows, ...next.flows], next_cursor: next.next_cursor });
      shown.current = data.flows.length + next.flows.length;
    } finally {
      setMore(false);
    }
  }
  const edit = can(currentMe().me, "edit");
  return (
    <section className="page">
      <div className="page-head">
        <h1>Flows</h1>
        {edit && (
          <Link to="/flows/new" className="btn primary">
            New flow
          </Link>
        )}
      </div>
      {notice && (
        <div className="banner ok" role="status" data-notice>
          {notice}
        </div>
      )}
      <ErrorBox error={error} onRetry={reload} />
      {loading && <Spinner label="Loading flows…" />}
      {data && data.flows.length === 0 && (
        <Empty title="No flows yet">
          <p>A flow is a graph of steps: workers that call your services, approvals by people, and parallel fan-outs.</p>
          {edit && (
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
                <th scope="col">Runs</th>
                <th scope="col">Last run</th>
                <th scope="col">Triggers</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {data.flows.map((f) => (
                <tr key={f.id} data-flow={f.id}>
                  <td>
                    <Link to={`/flows/${f.id}`}>{f.name}</Link>
                  </td>
                  <td>v{f.version.number}</td>
                  <td title={f.updated_at}>{ago(f.updated_at)}</td>
                  <td>
                    <RunCounts flow={f} />
                  </td>
                  <td>{can(currentMe().me, "read") ? <LastRun flowId={f.id} /> : "—"}</td>
                  <td>
                    <Triggers flow={f} />
                  </td>
                  <td className="actions">
                    <Link to={`/runs?flow_id=${f.id}`}>Runs</Link>
                    {edit && (
                      <>
                        {" · "}
                        <button type="button" className="linklike danger-link" data-action="delete-flow" aria-label={`Delete flow ${f.name}`} onClick={() => setDeleting(f)}>
                          Delete
                        </button>
                      </>
                    )}
                  </td>
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
      {deleting && (
        <DeleteDialog
          key={deleting.id}
          flow={deleting}
          onClose={() => setDeleting(null)}
          onDeleted={() => {
            setNotice(`Deleted flow “${deleting.name}”.`);
            setData((d) => (d ? { ...d, flows: d.flows.filter((x) => x.id !== deleting.id) } : d));
            setDeleting(null);
            reload();
          }}
        />
      )}
    </section>
  );
}
