import { useState, type FormEvent } from "react";
import { api, describe, type AuditPage } from "../api";
import { ErrorBox, Empty, Spinner, useLoad } from "../components/common";
import { Link, navigate } from "../router";
import { auditDetails } from "./auditDetails";

type Page = AuditPage;

// Audit is the admin's audit trail: every change a person or token made
// through the API, newest first, filtered by actor, target (run:<id>,
// flow:<id>, user:<id>) and time. The filters are in the URL, so a run's
// page links to its own trail.
export function Audit({ actor, target, since }: { actor: string; target: string; since: string }) {
  const q = new URLSearchParams();
  if (actor) q.set("actor", actor);
  if (target) q.set("target", target);
  if (since) q.set("since", since);
  q.set("limit", "100");
  const { data, setData, error, loading, reload } = useLoad(() => api<Page>("GET", `/audit?${q}`), [actor, target, since]);
  const [more, setMore] = useState(false);
  const [moreError, setMoreError] = useState<string | null>(null);
  const [a, setA] = useState(actor);
  const [t, setT] = useState(target);
  const [s, setS] = useState(since ? toLocalInput(since) : "");

  function apply(e: FormEvent) {
    e.preventDefault();
    const p = new URLSearchParams();
    if (a.trim()) p.set("actor", a.trim());
    if (t.trim()) p.set("target", t.trim());
    if (s) {
      const d = new Date(s);
      if (!isNaN(d.getTime())) p.set("since", d.toISOString());
    }
    navigate(`/audit${p.toString() ? `?${p}` : ""}`);
  }

  async function loadMore() {
    if (!data?.next_cursor) return;
    setMore(true);
    setMoreError(null);
    try {
      const next = await api<Page>("GET", `/audit?${q}&cursor=${encodeURIComponent(data.next_cursor)}`);
      setData({ entries: [...data.entries, ...next.entries], next_cursor: next.next_cursor });
    } catch (err) {
      setMoreError(describe(err));
    } finally {
      setMore(false);
    }
  }

  return (
    <section className="page">
      <div className="page-head">
        <h1>Audit trail</h1>
      </div>
      <form className="filters audit-filters" onSubmit={apply} aria-label="Filter the audit trail">
        <label htmlFor="audit-actor">Actor</label>
        <input id="audit-actor" placeholder="ana@example.com" value={a} onChange={(e) => setA(e.target.value)} />
        <label htmlFor="audit-target">Target</label>
        <input id="audit-target" className="mono" placeholder="run:<id>" value={t} onChange={(e) => setT(e.target.value)} />
        <label htmlFor="audit-since">Since</label>
        <input id="audit-since" type="datetime-local" value={s} onChange={(e) => setS(e.target.value)} />
        <button type="submit" className="btn">
          Filter
        </button>
        {(actor || target || since) && (
          <Link to="/audit" className="btn ghost">
            Clear
          </Link>
        )}
      </form>
      <ErrorBox error={error} onRetry={reload} />
      {loading && <Spinner label="Loading the audit trail…" />}
      {data && data.entries.length === 0 && <Empty title="No entries">{actor || target || since ? <p>Nothing matches these filters.</p> : null}</Empty>}
      {data && data.entries.length > 0 && (
        <div className="table-wrap">
          <table className="table compact audit" aria-label="Audit entries">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Actor</th>
                <th scope="col">Action</th>
                <th scope="col">Target</th>
                <th scope="col">Status</th>
                <th scope="col">Details</th>
              </tr>
            </thead>
            <tbody>
              {data.entries.map((e) => (
                <tr key={e.id} data-audit-action={e.action} data-actor={e.actor}>
                  <td title={e.at} className="nowrap">
                    {new Date(e.at).toLocaleString()}
                  </td>
                  <td>
                    <button type="button" className="linklike" title="Only this actor" onClick={() => navigate(`/audit?actor=${encodeURIComponent(e.actor)}`)}>
                      {e.actor}
                    </button>
                  </td>
                  <td data-audit-summary={e.summary ? "" : undefined}>
                    {e.summary ? (
                      <>
                        <span>{e.summary}</span>
                        <br />
                        <span className="mono muted small">{e.action}</span>
                      </>
                    ) : (
                      <span className="mono">{e.action}</span>
                    )}
                  </td>
                  <td className="mono">
                    <TargetLink target={e.target} />
                  </td>
                  <td>{e.status}</td>
                  <td className="small audit-details" title={`request ${e.request_id}`}>
                    <AuditDetails details={e.details} />
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
        <button type="button" className="btn" onClick={() => void loadMore()} disabled={more}>
          {more ? "Loading…" : "Show older"}
        </button>
      )}
    </section>
  );
}

// AuditDetails shows an entry's details as labelled lines (the step, the
// token, the fields changed), not as JSON.
function AuditDetails({ details }: { details: Record<string, unknown> | null | undefined }) {
  const lines = auditDetails(details);
  if (!lines.length) return null;
  return (
    <dl className="audit-detail-list">
      {lines.map((l) => (
        <div key={l.label} data-detail={l.label}>
          <dt>{l.label}</dt>
          <dd>{l.value}</dd>
        </div>
      ))}
    </dl>
  );
}

function TargetLink({ target }: { target: string }) {
  if (!target) return <span className="muted">—</span>;
  const [kind, id] = [target.slice(0, target.indexOf(":")), target.slice(target.indexOf(":") + 1)];
  const to = kind === "run" ? `/runs/${id}` : kind === "flow" ? `/flows/${id}` : null;
  return (
    <>
      {to ? <Link to={to}>{target}</Link> : target}{" "}
      <button type="button" className="linklike small" title="Only this target" aria-label={`Only ${target}`} onClick={() => navigate(`/audit?target=${encodeURIComponent(target)}`)}>
        ⌕
      </button>
    </>
  );
}

// toLocalInput turns an RFC 3339 time into a datetime-local value.
function toLocalInput(iso: string): string {
  const d = new Date(iso);
  if (isNaN(d.getTime())) return "";
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}
