import { useEffect, useState } from "react";
import { api, can, currentMe, describe, stream, type Board, type Entity } from "../api";
import { ago, duration, Empty, ErrorBox, isNotFound, Json, Modal, NotFound, Spinner, useLoad, useThrottled } from "../components/common";
import { Link, navigate } from "../router";

interface BoardSummary {
  id: string;
  name: string;
  sections: { id: string; name: string }[];
}

export function BoardList() {
  const { data, error, loading, reload } = useLoad(() => api<{ boards: BoardSummary[] }>("GET", "/boards"), []);
  return (
    <section className="page">
      <div className="page-head">
        <h1>Boards</h1>
      </div>
      <ErrorBox error={error} onRetry={reload} />
      {loading && <Spinner label="Loading boards…" />}
      {data && data.boards.length === 0 && (
        <Empty title="No boards yet">
          <p>
            A board shows entities (leads, customers) moving through sections as runs progress. Create one with <code>POST /api/v1/boards</code>,
            then choose it on a flow.
          </p>
        </Empty>
      )}
      <ul className="board-list">
        {data?.boards.map((b) => (
          <li key={b.id} className="card">
            <h2>
              <Link to={`/boards/${b.id}`}>{b.name}</Link>
            </h2>
            <p className="muted small">{b.sections.map((s) => s.name).join(" → ")}</p>
          </li>
        ))}
      </ul>
    </section>
  );
}

// BoardView: sections as columns, cards moving live (entity.moved events on
// the global stream), counts and time in section per column, and an
// entity's journey.
export function BoardView({ boardId, entityId }: { boardId: string; entityId: string | null }) {
  const { data, error, loading, reload } = useLoad(() => api<Board>("GET", `/boards/${boardId}`), [boardId]);
  const refresh = useThrottled(reload, 300);
  const [live, setLive] = useState(false);
  const [moved, setMoved] = useState<Record<string, number>>({});
  // Later pages of sections' entities (oldest in section first), loaded on
  // demand; a reload starts over.
  const [extra, setExtra] = useState<Record<string, { entities: Entity[]; next: string | null }>>({});
  useEffect(() => setExtra({}), [data]);
  const loadMore = (sectionId: string, cursor: string) => {
    api<Board>(
      "GET",
      `/boards/${boardId}?section_id=${encodeURIComponent(sectionId)}&cursor=${encodeURIComponent(cursor)}`,
    ).then((b) => {
      const s = b.sections[0];
      if (!s) return;
      setExtra((x) => ({
        ...x,
        [sectionId]: { entities: [...(x[sectionId]?.entities ?? []), ...s.entities], next: s.next_cursor ?? null },
      }));
    });
  };
  useEffect(
    () =>
      stream(
        "/events",
        (e) => {
          if (e.type === "entity.moved" || e.type === "run.started") {
            refresh();
            const id = e.payload?.entity_id;
            if (id) setMoved((m) => ({ ...m, [id]: Date.now() }));
          }
        },
        setLive,
      ),
    [refresh],
  );
  // Journey durations tick without reloading.
  const [, tick] = useState(0);
  useEffect(() => {
    const t = setInterval(() => tick((n) => n + 1), 15000);
    return () => clearInterval(t);
  }, []);

  if (loading) return <Spinner label="Loading board…" />;
  if (!data && isNotFound(error)) return <NotFound what="board" id={boardId} back="/boards" backLabel="All boards" />;
  if (error || !data) return <ErrorBox error={error} onRetry={reload} />;
  const total = data.sections.reduce((n, s) => n + s.count, 0);
  const sectionName: Record<string, string> = {};
  for (const s of data.sections) sectionName[s.id] = s.name;

  return (
    <section className="page board-page">
      <div className="page-head">
        <h1>{data.name}</h1>
        <span className="muted">{total === 1 ? "1 entity" : `${total} entities`}</span>
        <span className={`live ${live ? "on" : ""}`}>{live ? "● live" : "○ reconnecting…"}</span>
      </div>
      <div className="board" role="list" aria-label="Sections">
        {data.sections.map((s) => (
          <div key={s.id} className="column" role="listitem" aria-label={`${s.name}: ${s.count}`} data-section={s.id}>
            <div className="column-head">
              <h2>{s.name}</h2>
              <span className="count">{s.count}</span>
            </div>
            <p className="column-stats muted small">
              {s.count > 0 ? `avg ${duration(s.stats.avg_current_seconds)} here` : "empty"}
              {s.stats.exits > 0 ? ` · ${s.stats.exits} left after ${duration(s.stats.avg_seconds_before_exit)} avg` : ""}
            </p>
            <ul className="cards">
              {s.entities.length === 0 && <li className="muted small empty-col">No entities</li>}
              {[...s.entities, ...(extra[s.id]?.entities ?? [])].map((e) => (
                <li key={e.id}>
                  <button
                    type="button"
                    className={`entity-card ${moved[e.id] && Date.now() - moved[e.id] < 3000 ? "just-moved" : ""}`}
                    data-entity={e.id}
                    onClick={() => navigate(`/boards/${boardId}?entity=${e.id}`)}
                  >
                    <strong>{e.name}</strong>
                    {e.email && <span className="small">{e.email}</span>}
                    <span className="small muted">
                      {e.type} · {duration(e.time_in_section_seconds ?? 0)} here
                    </span>
                  </button>
                </li>
              ))}
            </ul>
            {(() => {
              const next = extra[s.id] ? extra[s.id].next : (s.next_cursor ?? null);
              const shown = s.entities.length + (extra[s.id]?.entities.length ?? 0);
              return (
                next && (
                  <button type="button" className="btn ghost small" onClick={() => loadMore(s.id, next)}>
                    Show more ({s.count - shown} not shown)
                  </button>
                )
              );
            })()}
          </div>
        ))}
      </div>
      {entityId && <Journey entityId={entityId} sections={data.sections} sectionName={sectionName} onClose={() => navigate(`/boards/${boardId}`)} onMoved={reload} />}
    </section>
  );
}

function Journey({
  entityId,
  sections,
  sectionName,
  onClose,
  onMoved,
}: {
  entityId: string;
  sections: { id: string; name: string }[];
  sectionName: Record<string, string>;
  onClose: () => void;
  onMoved: () => void;
}) {
  const { data, error, loading, reload } = useLoad(() => api<Entity>("GET", `/entities/${entityId}`), [entityId]);
  const [target, setTarget] = useState("");
  const [moveError, setMoveError] = useState<string | null>(null);
  const name = (id: string | null) => (id ? sectionName[id] ?? id : "—");
  async function move() {
    setMoveError(null);
    try {
      await api("POST", `/entities/${entityId}/move`, { section_id: target });
      setTarget("");
      reload();
      onMoved();
    } catch (err) {
      setMoveError(describe(err));
    }
  }
  return (
    <Modal title={data ? `${data.name} — journey` : "Journey"} onClose={onClose}>
      {loading && <Spinner />}
      <ErrorBox error={error} onRetry={reload} />
      {data && (
        <div className="journey">
          <p>
            <strong>{data.type}</strong>
            {data.email ? ` · ${data.email}` : ""} · now in <strong>{name(data.section_id)}</strong>
            {data.current_run_id && (
              <>
                {" "}
                · <Link to={`/runs/${data.current_run_id}`}>current run</Link>
              </>
            )}
          </p>
          <ol className="timeline" aria-label="Journey">
            {(data.journey ?? []).map((j) => (
              <li key={j.id}>
                <span className="muted small" title={j.created_at}>
                  {new Date(j.created_at).toLocaleString()} ({ago(j.created_at)})
                </span>
                <div>
                  <strong>{j.kind.replace(/_/g, " ")}</strong>
                  {j.to_section_id && (j.from_section_id && j.from_section_id !== j.to_section_id ? (
                    <>
                      {" "}
                      {name(j.from_section_id)} → {name(j.to_section_id)}
                    </>
                  ) : (
                    <> in {name(j.to_section_id)}</>
                  ))}
                  {j.complete_as && <span className={`tag tag-${j.complete_as}`}>{j.complete_as}</span>}
                  {j.run_id && (
                    <>
                      {" "}
                      · <Link to={`/runs/${j.run_id}`}>run</Link>
                      {j.node_key ? <span className="mono"> {j.node_key}</span> : null}
                    </>
                  )}
                </div>
              </li>
            ))}
          </ol>
          {data.metadata && Object.keys(data.metadata).length > 0 && (
            <details>
              <summary>Metadata</summary>
              <Json value={data.metadata} />
            </details>
          )}
          {can(currentMe().me, "board") && (
          <div className="row">
            <label htmlFor="move-to">Move to</label>
            <select id="move-to" value={target} onChange={(e) => setTarget(e.target.value)}>
              <option value="">Choose a section…</option>
              {sections
                .filter((s) => s.id !== data.section_id)
                .map((s) => (
                  <option key={s.id} value={s.id}>
                    {s.name}
                  </option>
                ))}
            </select>
            <button type="button" className="btn small" disabled={!target} onClick={() => void move()}>
              Move
            </button>
          </div>
          )}
          {moveError && (
            <p className="field-error" role="alert">
              {moveError}
            </p>
          )}
        </div>
      )}
    </Modal>
  );
}
