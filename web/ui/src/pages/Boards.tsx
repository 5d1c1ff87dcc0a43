import { useEffect, useRef, useState, type FormEvent } from "react";
import { api, can, currentMe, describe, stream, type Board, type Entity, type BoardListed } from "../api";
import { duration, Empty, ErrorBox, isNotFound, Modal, NotFound, Spinner, useLoad, useThrottled } from "../components/common";
import { Link, navigate } from "../router";
import { BoardSettings } from "./boards/BoardSettings";
import { Journey } from "./boards/EntityEdit";

type BoardSummary = BoardListed;

// sectionID makes a section id from its name: "Follow up" → "follow-up".
export function sectionID(name: string, taken: string[]): string {
  const base =
    name
      .toLowerCase()
      .normalize("NFKD")
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-+|-+$/g, "")
      .slice(0, 56) || "section";
  let id = base;
  for (let n = 2; taken.includes(id); n++) id = `${base}-${n}`;
  return id;
}

function NewBoard({ onClose }: { onClose: () => void }) {
  const [name, setName] = useState("");
  const [sections, setSections] = useState("New, In progress, Done");
  const [err, setErr] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  async function submit(e: FormEvent) {
    e.preventDefault();
    setErr(null);
    const ids: string[] = [];
    const secs = sections
      .split(/[,\n]/)
      .map((s) => s.trim())
      .filter(Boolean)
      .map((n) => {
        const id = sectionID(n, ids);
        ids.push(id);
        return { id, name: n };
      });
    setBusy(true);
    try {
      const b = await api<Board>("POST", "/boards", { name, sections: secs });
      navigate(`/boards/${b.id}`);
    } catch (x) {
      setErr(describe(x));
      setBusy(false);
    }
  }
  return (
    <Modal title="New board" onClose={onClose}>
      <form onSubmit={(e) => void submit(e)} data-form="new-board">
        <div className="field">
          <label htmlFor="board-name">Name</label>
          <input id="board-name" value={name} required maxLength={200} onChange={(e) => setName(e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor="board-sections">Sections, in order (comma-separated)</label>
          <input id="board-sections" value={sections} onChange={(e) => setSections(e.target.value)} />
        </div>
        {err && (
          <p className="field-error" role="alert">
            {err}
          </p>
        )}
        <button type="submit" className="btn primary" disabled={busy || !name.trim()}>
          Create board
        </button>
      </form>
    </Modal>
  );
}

export function BoardList() {
  const { data, error, loading, reload } = useLoad(() => api<{ boards: BoardSummary[] }>("GET", "/boards"), []);
  const [creating, setCreating] = useState(false);
  return (
    <section className="page">
      <div className="page-head">
        <h1>Boards</h1>
        {can(currentMe().me, "edit") && (
          <button type="button" className="btn primary" data-action="new-board" onClick={() => setCreating(true)}>
            New board
          </button>
        )}
      </div>
      {creating && <NewBoard onClose={() => setCreating(false)} />}
      <ErrorBox error={error} onRetry={reload} />
      {loading && <Spinner label="Loading boards…" />}
      {data && data.boards.length === 0 && (
        <Empty title="No boards yet">
          {can(currentMe().me, "edit") ? (
            <p>
              A board shows entities (leads, customers) moving through sections as runs progress. Create one with <strong>New board</strong>{" "}
              (or <code>POST /api/v1/boards</code>), then choose it on a flow.
            </p>
          ) : (
            <p>A board shows entities (leads, customers) moving through sections as runs progress. An editor or admin creates one and chooses it on a flow.</p>
          )}
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
  // The search is read through a ref so that a new search keeps the board
  // on screen until its answer arrives.
  const query = useRef("");
  const [q, setQ] = useState("");
  // wanted is how many entities a section shows once Show more was
  // pressed: the board read again (at every move on it) reads that many of
  // it, so the entities shown stay on screen, and current.
  const wanted = useRef<Record<string, number>>({});
  const { data, error, loading, reload } = useLoad(async () => {
    const search = query.current ? `&q=${encodeURIComponent(query.current)}` : "";
    const b = await api<Board>("GET", `/boards/${boardId}${search ? `?${search.slice(1)}` : ""}`);
    await Promise.all(
      b.sections
        .filter((s) => s.next_cursor && (wanted.current[s.id] ?? 0) > s.entities.length)
        .map(async (s) => {
          const want = wanted.current[s.id];
          const got: Entity[] = [];
          let cursor: string | null = null;
          do {
            const page: Board = await api<Board>(
              "GET",
              `/boards/${boardId}?section_id=${encodeURIComponent(s.id)}&limit=${Math.min(500, want - got.length)}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}${search}`,
            );
            const ps = page.sections[0];
            if (!ps) return;
            got.push(...ps.entities.filter((e) => !got.some((g) => g.id === e.id)));
            cursor = ps.next_cursor ?? null;
          } while (cursor && got.length < want);
          s.entities = got;
          s.next_cursor = cursor;
        }),
    );
    return b;
  }, [boardId]);
  useEffect(() => {
    const t = setTimeout(() => {
      if (query.current === q.trim()) return;
      query.current = q.trim();
      wanted.current = {};
      reload();
    }, 250);
    return () => clearTimeout(t);
  }, [q, reload]);
  const [editing, setEditing] = useState(false);
  const refresh = useThrottled(reload, 300);
  const [live, setLive] = useState(false);
  const [moved, setMoved] = useState<Record<string, number>>({});
  // Show more: a section's next page (oldest in section first) is read
  // with the board, and at every reading after.
  const loadMore = (sectionId: string, shown: number) => {
    wanted.current = { ...wanted.current, [sectionId]: shown + 100 };
    reload();
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
        <input
          id="board-search"
          type="search"
          className="board-search"
          placeholder="Search name or email…"
          aria-label="Search entities by name or email"
          value={q}
          maxLength={200}
          onChange={(e) => setQ(e.target.value)}
        />
        <Link className="btn ghost" to={`/boards/${boardId}/analytics`} data-link="board-analytics">
          Analytics
        </Link>
        {can(currentMe().me, "edit") && (
          <button type="button" className="btn" data-action="edit-board" onClick={() => setEditing(true)}>
            Edit board
          </button>
        )}
      </div>
      {query.current && (
        <p className="muted small" data-search-result>
          {total === 1 ? "1 entity matches" : `${total} entities match`} “{query.current}”
        </p>
      )}
      {editing && <BoardSettings board={data} onClose={() => setEditing(false)} onChanged={reload} />}
      <div className="board" role="list" aria-label="Sections">
        {data.sections.map((s) => (
          <div key={s.id} className="column" role="listitem" aria-label={`${s.name}: ${s.count}`} data-section={s.id}>
            <div className="column-head">
              <h2>{s.name}</h2>
              <span className="count">{s.count}</span>
            </div>
            {s.sla_seconds ? <p className="column-sla muted small">SLA {duration(s.sla_seconds)}</p> : null}
            <p className="column-stats muted small">
              {s.count > 0 ? `avg ${duration(s.stats.avg_current_seconds)} here` : "empty"}
              {s.stats.exits > 0 ? ` · ${s.stats.exits} left after ${duration(s.stats.avg_seconds_before_exit)} avg` : ""}
            </p>
            <ul className="cards">
              {s.entities.length === 0 && <li className="muted small empty-col">No entities</li>}
              {s.entities.map((e) => (
                <li key={e.id}>
                  <button
                    type="button"
                    className={`entity-card ${moved[e.id] && Date.now() - moved[e.id] < 3000 ? "just-moved" : ""} ${e.overdue ? "overdue" : ""}`}
                    data-entity={e.id}
                    data-overdue={e.overdue ? "true" : undefined}
                    onClick={() => navigate(`/boards/${boardId}?entity=${e.id}`)}
                  >
                    <strong>{e.name}</strong>
                    {e.email && <span className="small">{e.email}</span>}
                    <CardMeta metadata={e.metadata} fields={data.card_fields} />
                    <span className="small muted">
                      {e.type} · {duration(e.time_in_section_seconds ?? 0)} here
                    </span>
                    {e.overdue && s.sla_seconds && (
                      <span className="overdue-badge small" title={`Longer here than the section's SLA (${duration(s.sla_seconds)})`}>
                        overdue
                      </span>
                    )}
                  </button>
                </li>
              ))}
            </ul>
            {s.next_cursor && (
              <button type="button" className="btn ghost small" data-action="section-more" onClick={() => loadMore(s.id, s.entities.length)}>
                Show more ({s.count - s.entities.length} not shown)
              </button>
            )}
          </div>
        ))}
      </div>
      {entityId && (
        <Journey
          entityId={entityId}
          sections={data.sections}
          sectionName={sectionName}
          onClose={() => navigate(`/boards/${boardId}`)}
          onMoved={reload}
          board={data}
        />
      )}
    </section>
  );
}

// cardKeys are the metadata keys a card shows: the board's card_fields,
// else the first three keys of the entity's metadata.
export function cardKeys(metadata: any, fields: string[] | undefined): string[] {
  if (!metadata || typeof metadata !== "object" || Array.isArray(metadata)) return [];
  if (fields && fields.length > 0) return fields.filter((k) => k in metadata);
  return Object.keys(metadata).slice(0, 3);
}

function metaText(v: unknown): string {
  if (v === null || v === undefined) return "—";
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

function CardMeta({ metadata, fields }: { metadata: any; fields?: string[] }) {
  const keys = cardKeys(metadata, fields);
  if (keys.length === 0) return null;
  return (
    <dl className="card-meta">
      {keys.map((k) => (
        <div key={k} data-meta-key={k}>
          <dt>{k}</dt>
          <dd title={metaText(metadata[k])}>{metaText(metadata[k])}</dd>
        </div>
      ))}
    </dl>
  );
}
