import { useEffect, useRef, useState, type FormEvent } from "react";
import { api, can, currentMe, describe, stream, type Flow, type Run, type BulkRunsAnswer } from "../api";
import { ago, duration, Empty, ErrorBox, Spinner, Status, useLoad, useThrottled } from "../components/common";
import { Link, navigate } from "../router";

const STATUSES = ["", "running", "waiting", "queued", "paused", "completed", "failed", "cancelled"];
const STATUS_LABEL: Record<string, string> = { "": "Any status", waiting: "waiting for a person", queued: "queued (waiting its turn)" };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

// RunId shows a whole run id, its timestamp head (a UUIDv7 begins with the
// time it was made, so runs started together share it) muted and its
// random tail, which tells runs apart, in bold.
export function RunId({ id }: { id: string }) {
  return (
    <span className="run-id mono" title={id}>
      <span className="id-head">{id.slice(0, 24)}</span>
      <span className="id-tail">{id.slice(24)}</span>
    </span>
  );
}

type RunsPage = { runs: Run[]; next_cursor: string | null };

// readPages reads the first n pages of a list (get(null) is the first,
// get(cursor) the one after), as one page: their items and the cursor
// after the last read.
export async function readPages<T extends { id: string }>(
  get: (cursor: string | null) => Promise<{ runs: T[]; next_cursor: string | null }>,
  n: number,
): Promise<{ runs: T[]; next_cursor: string | null }> {
  const runs: T[] = [];
  const seen = new Set<string>();
  let cursor: string | null = null;
  for (let i = 0; i < Math.max(1, n); i++) {
    const page: { runs: T[]; next_cursor: string | null } = await get(cursor);
    for (const r of page.runs) {
      if (seen.has(r.id)) continue; // moved up a page as newer runs came
      seen.add(r.id);
      runs.push(r);
    }
    cursor = page.next_cursor;
    if (!cursor) break;
  }
  return { runs, next_cursor: cursor };
}

// runDuration is how long a run took, or has been going.
function runDuration(r: Run): string {
  const end = r.finished_at && r.status !== "paused" && r.status !== "running" ? new Date(r.finished_at).getTime() : Date.now();
  return duration(Math.max(0, (end - new Date(r.created_at).getTime()) / 1000));
}

export function RunList({ flowId, status, node, errorText }: { flowId: string | null; status: string | null; node?: string | null; errorText?: string | null }) {
  const q = new URLSearchParams();
  if (flowId) q.set("flow_id", flowId);
  // "waiting" (for a person) is a running run with a step in the inbox:
  // running runs are read and those the inbox names kept.
  const waitingOnly = status === "waiting";
  if (status) q.set("status", waitingOnly ? "running" : status);
  if (node) q.set("node", node);
  if (errorText) q.set("error", errorText);
  q.set("limit", "50");
  const flows = useLoad(() => api<{ flows: Flow[] }>("GET", "/flows?counts=false&limit=500"), []);
  // pages is how many pages the list shows (Load more adds one): the list
  // read again at each run's event reads as many, so the runs loaded with
  // Load more stay on screen, and current. Another filter starts over.
  const pages = useRef({ key: "", n: 1 });
  const { data, setData, error, loading, reload } = useLoad(async () => {
    const key = q.toString();
    if (pages.current.key !== key) pages.current = { key, n: 1 };
    // As many runs as the pages shown, in pages of up to 500 (the API's
    // most): one request for ten pages, not ten.
    for (;;) {
      const n = pages.current.n;
      const big = new URLSearchParams(q);
      big.set("limit", String(Math.min(500, 50 * n)));
      const got = await readPages(
        (cursor) => api<RunsPage>("GET", `/runs?${big}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`),
        Math.ceil((50 * n) / Math.min(500, 50 * n)),
      );
      // A Load more that ended meanwhile added a page this read has not:
      // read again rather than drop it.
      if (pages.current.n === n) return got;
    }
  }, [flowId, status, node, errorText]);
  const [moreError, setMoreError] = useState<string | null>(null);
  // The runs a person is asked something in: the inbox, read with the list
  // (a role that cannot read it sees no marks).
  const waiting = useLoad(
    () => api<{ approvals: { run_id: string; label: string }[] }>("GET", "/approvals?assigned=all&limit=500").catch(() => ({ approvals: [] })),
    [],
  );
  const asked: Record<string, string> = {};
  for (const a of waiting.data?.approvals ?? []) asked[a.run_id] = a.label;
  const [more, setMore] = useState(false);
  const [bulk, setBulk] = useState(false);
  const [find, setFind] = useState("");
  const [nodeText, setNodeText] = useState(node ?? "");
  const [errText, setErrText] = useState(errorText ?? "");
  const refresh = useThrottled(() => {
    reload();
    waiting.reload();
  }, 1000);
  useEffect(
    () =>
      stream("/events", (e) => {
        if (e.type.startsWith("run.") || e.type.startsWith("node.")) refresh();
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
  const setFilters = (set: Record<string, string>) => {
    const p = new URLSearchParams(location.search);
    for (const [k, v] of Object.entries(set)) {
      if (v) p.set(k, v);
      else p.delete(k);
    }
    navigate(`/runs${p.toString() ? `?${p}` : ""}`);
  };
  // find: a whole run id opens that run; part of one narrows the list.
  const needle = find.trim().toLowerCase();
  const shown = (data?.runs ?? []).filter((r) => (!needle || r.id.includes(needle)) && (!waitingOnly || r.id in asked));
  async function loadMore() {
    if (!data?.next_cursor) return;
    setMore(true);
    setMoreError(null);
    try {
      const next = await api<RunsPage>("GET", `/runs?${q}&cursor=${encodeURIComponent(data.next_cursor)}`);
      pages.current.n++;
      setData((d) => (d ? { runs: [...d.runs, ...next.runs.filter((r) => !d.runs.some((x) => x.id === r.id))], next_cursor: next.next_cursor } : d));
    } catch (err) {
      setMoreError(`Could not load more runs: ${describe(err)}`);
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
                {STATUS_LABEL[s] ?? s}
              </option>
            ))}
          </select>
          {can(currentMe().me, "operate") && (
            <button type="button" className="btn" data-action="bulk-open" aria-expanded={bulk && !waitingOnly} disabled={waitingOnly} title={waitingOnly ? "Bulk actions pick by status; choose running" : undefined} onClick={() => setBulk((b) => !b)}>
              Bulk action…
            </button>
          )}
        </div>
      </div>
      <div className="filters run-search">
        <form
          role="search"
          onSubmit={(e: FormEvent) => {
            e.preventDefault();
            if (UUID.test(find.trim())) navigate(`/runs/${find.trim().toLowerCase()}`);
          }}
        >
          <label htmlFor="runs-find">Run id</label>
          <input id="runs-find" className="mono" placeholder="whole id to open, or part to narrow" value={find} onChange={(e) => setFind(e.target.value)} />
        </form>
        <form
          onSubmit={(e: FormEvent) => {
            e.preventDefault();
            setFilters({ node: nodeText.trim(), error: errText.trim() });
          }}
        >
          <label htmlFor="runs-node">Failed step</label>
          <input id="runs-node" className="mono" placeholder="node id" value={nodeText} onChange={(e) => setNodeText(e.target.value)} />
          <label htmlFor="runs-error">Error contains</label>
          <input id="runs-error" placeholder="text" value={errText} onChange={(e) => setErrText(e.target.value)} />
          <button type="submit" className="btn" data-action="runs-filter">
            Filter
          </button>
        </form>
      </div>
      {bulk && !waitingOnly && <BulkBar flowId={flowId} flowName={flowId ? (names[flowId] ?? null) : null} status={status} onApplied={reload} onClose={() => setBulk(false)} />}
      <ErrorBox error={error} onRetry={reload} />
      {loading && <Spinner label="Loading runs…" />}
      {data && data.runs.length === 0 && (
        <Empty title="No runs here yet">
          <p>
            {can(currentMe().me, "operate")
              ? "Start a run from a flow's page, or fire one of its triggers."
              : "Runs start from a flow's triggers, or by hand from its page (an operator's or admin's)."}
          </p>
          <Link to="/flows">Go to flows</Link>
        </Empty>
      )}
      {data && data.runs.length > 0 && shown.length === 0 && needle && (
        <Empty title="No run here has that id">
          <p>Only the runs listed are looked through; paste a whole id to open any run.</p>
        </Empty>
      )}
      {data && data.runs.length > 0 && shown.length === 0 && !needle && waitingOnly && (
        <Empty title="No run here waits for a person">
          <p>{data.next_cursor ? "Load more to look through older running runs." : "Nothing is in the inbox."}</p>
        </Empty>
      )}
      {data && shown.length > 0 && (
        <div className="table-wrap">
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Run</th>
                <th scope="col">Flow</th>
                <th scope="col">Status</th>
                <th scope="col">Started</th>
                <th scope="col">Finished</th>
                <th scope="col">Duration</th>
                <th scope="col">Entity</th>
                <th scope="col">Error</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((r) => (
                <tr key={r.id} data-run={r.id} data-waiting={r.id in asked ? "" : undefined}>
                  <td>
                    <Link to={`/runs/${r.id}`}>
                      <RunId id={r.id} />
                    </Link>
                  </td>
                  <td>{names[r.flow_id] ?? <span className="mono">{r.flow_id.slice(0, 8)}</span>}</td>
                  <td>
                    <Status status={r.status} />
                    {r.id in asked && (
                      <span className="waiting-chip" title={asked[r.id] ? `Waiting for a person: ${asked[r.id]}` : "Waiting for a person"}>
                        waiting for a person
                      </span>
                    )}
                  </td>
                  <td title={r.created_at}>{ago(r.created_at)}</td>
                  <td title={r.finished_at ?? ""}>{r.finished_at && r.status !== "paused" ? ago(r.finished_at) : "—"}</td>
                  <td className="num">{runDuration(r)}</td>
                  <td>{r.entity_id ? <span className="mono" title={r.entity_id}>…{r.entity_id.slice(-8)}</span> : "—"}</td>
                  <td className="run-error" title={r.error ?? ""}>
                    {r.error ?? ""}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {moreError && (
        <p className="field-error" role="alert">
          {moreError}
        </p>
      )}
      {data?.next_cursor && (
        <button type="button" className="btn" data-action="runs-more" onClick={() => void loadMore()} disabled={more}>
          {more ? "Loading…" : "Load more"}
        </button>
      )}
    </section>
  );
}

type BulkAnswer = BulkRunsAnswer;

const BULK_ACTIONS: { value: string; label: string; effect: string }[] = [
  { value: "retry", label: "Retry", effect: "Retries every failed step of each run (failures a failure edge took on stay)." },
  { value: "cancel", label: "Cancel", effect: "Cancels each run still going: steps running are cancelled and nothing else starts." },
  { value: "pause", label: "Pause", effect: "Pauses each running run: nothing new starts until it is resumed." },
  { value: "resume", label: "Resume", effect: "Resumes each paused run." },
];

// BulkBar applies an action to every run the list's filter (flow, status)
// and its own (a step, error text) pick: POST /runs/bulk, counted first
// with a dry run, then applied. A run the action does not fit is skipped.
function BulkBar(props: { flowId: string | null; flowName: string | null; status: string | null; onApplied: () => void; onClose: () => void }) {
  const [action, setAction] = useState("retry");
  const [node, setNode] = useState("");
  const [errorText, setErrorText] = useState("");
  const [busy, setBusy] = useState<"count" | "apply" | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [count, setCount] = useState<{ key: string; answer: BulkAnswer } | null>(null);
  const [result, setResult] = useState<BulkAnswer | null>(null);

  const filter: Record<string, string> = {};
  if (props.flowId) filter.flow_id = props.flowId;
  if (props.status) filter.status = props.status;
  if (node.trim()) filter.node = node.trim();
  if (errorText.trim()) filter.error_contains = errorText.trim();
  const everyRun = Object.keys(filter).length === 0;
  // The count is for this action and filter only: any change asks again.
  const key = JSON.stringify([action, filter]);
  const counted = count?.key === key ? count.answer : null;
  // change sets a field and drops the count: switching back to an action
  // counted before must not bring its old count (and apply button) back
  // while the new count is on its way.
  const change = (set: (v: string) => void, v: string) => {
    set(v);
    setCount(null);
  };
  const effect = BULK_ACTIONS.find((a) => a.value === action)?.effect ?? "";
  const picks = [
    props.flowId ? `flow ${props.flowName ?? props.flowId}` : "any flow",
    props.status ? `status ${props.status}` : "any status",
    ...(filter.node ? [`step ${filter.node} failed`] : []),
    ...(filter.error_contains ? [`error containing “${filter.error_contains}”`] : []),
  ];

  async function send(dryRun: boolean) {
    setBusy(dryRun ? "count" : "apply");
    setError(null);
    if (dryRun) setResult(null);
    try {
      const body: Record<string, unknown> = { action, filter, dry_run: dryRun };
      if (everyRun && !dryRun) body.all = true;
      const a = await api<BulkAnswer>("POST", "/runs/bulk", body);
      if (dryRun) setCount({ key, answer: a });
      else {
        setResult(a);
        setCount(null);
        props.onApplied();
      }
    } catch (err) {
      setError(`${dryRun ? "Not counted" : "Not applied"}: ${describe(err)}`);
    } finally {
      setBusy(null);
    }
  }

  return (
    <form
      className="bulk-bar"
      aria-label="Bulk action"
      onSubmit={(e: FormEvent) => {
        e.preventDefault();
        void send(true);
      }}
    >
      <div className="row">
        <label htmlFor="bulk-action">Action</label>
        <select id="bulk-action" value={action} disabled={busy !== null} onChange={(e) => change(setAction, e.target.value)}>
          {BULK_ACTIONS.map((a) => (
            <option key={a.value} value={a.value}>
              {a.label}
            </option>
          ))}
        </select>
        <label htmlFor="bulk-node">Step</label>
        <input id="bulk-node" className="mono" placeholder="node id (any)" value={node} disabled={busy !== null} onChange={(e) => change(setNode, e.target.value)} />
        <label htmlFor="bulk-error">Error contains</label>
        <input id="bulk-error" placeholder="text (any)" value={errorText} disabled={busy !== null} onChange={(e) => change(setErrorText, e.target.value)} />
        <button type="submit" className="btn" data-action="bulk-dry-run" disabled={busy !== null}>
          {busy === "count" ? "Counting…" : "Count runs"}
        </button>
        <button type="button" className="btn ghost" onClick={props.onClose}>
          Close
        </button>
      </div>
      <p className="small muted" data-bulk-filter>
        {effect} Picks the runs of {picks.join(", ")}. The flow and status are the list's filters above; a step picks the runs in which that step (a node id or an item's key) failed, and error text is
        looked for in the run's error, as written (case matters).
      </p>
      {counted && (
        <div className="bulk-count" role="status" data-bulk-matched={counted.matched}>
          <span>
            <strong>
              {counted.matched} {counted.matched === 1 ? "run matches" : "runs match"}
            </strong>
            {everyRun ? " — no filter: that is every run." : "."}
          </span>
          {counted.matched > 0 && (
            <button
              type="button"
              className={`btn ${action === "cancel" ? "danger" : "primary"}`}
              data-action="bulk-apply"
              disabled={busy !== null}
              onClick={() => {
                if (everyRun && !confirm(`${action[0].toUpperCase() + action.slice(1)} every run? No filter is set.`)) return;
                void send(false);
              }}
            >
              {busy === "apply" ? "Applying…" : `${action[0].toUpperCase() + action.slice(1)} ${counted.matched} ${counted.matched === 1 ? "run" : "runs"}`}
            </button>
          )}
        </div>
      )}
      {error && (
        <p className="field-error" role="alert" data-server-error>
          {error}
        </p>
      )}
      {result && (
        <div className="banner ok" role="status" data-bulk-result data-applied={result.applied} data-skipped={result.skipped} data-failed={result.errors.length}>
          {result.action[0].toUpperCase() + result.action.slice(1)}: {result.matched} matched, {result.applied} applied, {result.skipped} skipped (the action did not fit
          their state){result.errors.length ? `, ${result.errors.length} failed` : ""}.
          {result.errors.length > 0 && (
            <ul className="bulk-errors">
              {result.errors.map((e) => (
                <li key={e.run_id}>
                  <Link to={`/runs/${e.run_id}`}>
                    <RunId id={e.run_id} />
                  </Link>{" "}
                  {e.error}
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
    </form>
  );
}
