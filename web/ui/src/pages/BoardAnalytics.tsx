import { useState } from "react";
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { api, describe, download, type Board, type BoardAnalytics as Analytics } from "../api";
import { duration, ErrorBox, isNotFound, NotFound, Spinner, useLoad } from "../components/common";
import { Link, navigate } from "../router";

// RANGES are the windows a person picks from, in days.
const RANGES = [7, 30, 90, 365];

// BoardAnalytics shows a board's funnel over a range: entities into and
// out of each section, where they went next, time in section (p50, p90,
// max), who is there now and overdue — from the journey ledger.
export function BoardAnalytics({ boardId, days }: { boardId: string; days: number }) {
  const to = new Date();
  const from = new Date(to.getTime() - days * 86400_000);
  const range = `from=${encodeURIComponent(from.toISOString())}&to=${encodeURIComponent(to.toISOString())}`;
  const { data, error, loading, reload } = useLoad(
    () =>
      Promise.all([
        api<Analytics>("GET", `/boards/${boardId}/analytics?${range}`),
        // The overdue entities are the board's cards flagged overdue.
        api<Board>("GET", `/boards/${boardId}`),
      ]),
    [boardId, days],
  );
  const [exportError, setExportError] = useState<string | null>(null);
  if (loading && !data) return <Spinner label="Loading analytics…" />;
  if (!data && isNotFound(error)) return <NotFound what="board" id={boardId} back="/boards" backLabel="All boards" />;
  if (error || !data) return <ErrorBox error={error} onRetry={reload} />;
  const [a, board] = data;
  const funnel = a.sections.map((s) => ({ name: s.name, entered: s.entered, left: s.left, now: s.current }));
  // The chart's unit follows the longest stay: seconds, minutes, hours or days.
  const longest = Math.max(0, ...a.sections.map((s) => s.time_in_section_seconds.max ?? 0));
  const [unit, per] = longest >= 2 * 86400 ? ["days", 86400] : longest >= 2 * 3600 ? ["hours", 3600] : longest >= 120 ? ["minutes", 60] : ["seconds", 1];
  const inUnit = (v: number | null | undefined) => (v == null ? 0 : Math.round((v / per) * 10) / 10);
  const stays = a.sections.map((s) => ({
    name: s.name,
    p50: inUnit(s.time_in_section_seconds.p50),
    p90: inUnit(s.time_in_section_seconds.p90),
    max: inUnit(s.time_in_section_seconds.max),
  }));
  const overdue = board.sections.flatMap((s) => s.entities.filter((e) => e.overdue).map((e) => ({ e, s })));
  const name: Record<string, string> = {};
  for (const s of a.sections) name[s.id] = s.name;
  return (
    <section className="page analytics-page" data-board-analytics={boardId}>
      <div className="page-head">
        <h1>
          <Link to={`/boards/${boardId}`}>{board.name}</Link> · Analytics
        </h1>
        <div className="field inline">
          <label htmlFor="analytics-range">Range</label>
          <select id="analytics-range" value={days} onChange={(e) => navigate(`/boards/${boardId}/analytics?days=${e.target.value}`, true)}>
            {RANGES.map((d) => (
              <option key={d} value={d}>
                last {d} days
              </option>
            ))}
          </select>
        </div>
        <button
          type="button"
          className="btn ghost"
          data-action="export-csv"
          onClick={() => {
            setExportError(null);
            download(`/boards/${boardId}/analytics?format=csv&${range}`, `${board.name}-analytics.csv`).catch((e) => setExportError(`The export failed: ${describe(e)}`));
          }}
        >
          Export CSV
        </button>
      </div>
      {exportError && (
        <div className="error-box" role="alert">
          {exportError}
        </div>
      )}
      <p className="muted">
        {a.entities === 1 ? "1 entity" : `${a.entities} entities`} moved in the last {days} days. A move is an entity entering another section.
      </p>
      <div className="charts">
        <figure className="card chart" aria-label="Funnel: entities into and out of each section">
          <figcaption>Funnel</figcaption>
          <ResponsiveContainer width="100%" height={260}>
            <BarChart data={funnel}>
              <CartesianGrid strokeDasharray="3 3" />
              <XAxis dataKey="name" />
              <YAxis allowDecimals={false} />
              <Tooltip />
              <Legend />
              <Bar dataKey="entered" name="entered" fill="#4f46e5" isAnimationActive={false} />
              <Bar dataKey="left" name="left" fill="#0f766e" isAnimationActive={false} />
              <Bar dataKey="now" name="there now" fill="#9ca3af" isAnimationActive={false} />
            </BarChart>
          </ResponsiveContainer>
        </figure>
        <figure className="card chart" aria-label={`Time in section, ${unit}`}>
          <figcaption>Time in section ({unit})</figcaption>
          <ResponsiveContainer width="100%" height={260}>
            <BarChart data={stays}>
              <CartesianGrid strokeDasharray="3 3" />
              <XAxis dataKey="name" />
              <YAxis />
              <Tooltip />
              <Legend />
              <Bar dataKey="p50" name="median" fill="#16a34a" isAnimationActive={false} />
              <Bar dataKey="p90" name="p90" fill="#ca8a04" isAnimationActive={false} />
              <Bar dataKey="max" name="longest" fill="#dc2626" isAnimationActive={false} />
            </BarChart>
          </ResponsiveContainer>
        </figure>
      </div>
      <div className="table-wrap">
        <table className="table" aria-label="Sections">
          <thead>
            <tr>
              <th scope="col">Section</th>
              <th scope="col">Entered</th>
              <th scope="col">Left</th>
              <th scope="col">Went next</th>
              <th scope="col">Median stay</th>
              <th scope="col">p90</th>
              <th scope="col">There now</th>
              <th scope="col">Overdue</th>
            </tr>
          </thead>
          <tbody>
            {a.sections.map((s) => (
              <tr key={s.id} data-analytics-section={s.id}>
                <td>
                  {s.name}
                  {s.sla_seconds ? <span className="muted small"> · SLA {duration(s.sla_seconds)}</span> : null}
                </td>
                <td data-entered>{s.entered}</td>
                <td data-left>{s.left}</td>
                <td className="small">
                  {s.next.length === 0
                    ? "—"
                    : s.next.map((n) => `${name[n.section_id] ?? n.section_id} ${s.left ? Math.round((n.count / s.left) * 100) : 0} %`).join(", ")}
                </td>
                <td>{s.time_in_section_seconds.p50 == null ? "—" : duration(Math.round(s.time_in_section_seconds.p50))}</td>
                <td>{s.time_in_section_seconds.p90 == null ? "—" : duration(Math.round(s.time_in_section_seconds.p90))}</td>
                <td>{s.current}</td>
                <td data-overdue-count className={s.overdue > 0 ? "bad" : undefined}>
                  {s.overdue}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <h2>Overdue now</h2>
      {overdue.length === 0 ? (
        <p className="muted">No entity is past its section's SLA.</p>
      ) : (
        <ul className="overdue-list">
          {overdue.map(({ e, s }) => (
            <li key={e.id} data-overdue-entity={e.id}>
              <Link to={`/boards/${boardId}?entity=${e.id}`}>{e.name}</Link>{" "}
              <span className="muted small">
                in {s.name} for {duration(Math.round(e.time_in_section_seconds ?? 0))} (SLA {duration(s.sla_seconds ?? 0)})
              </span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
