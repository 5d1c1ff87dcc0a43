import { useEffect, useRef, useState, type FormEvent } from "react";
import { api, can, currentMe, describe, stream, type Board, type Entity, type BoardListed } from "../api";
import { ago, duration, Empty, ErrorBox, isNotFound, Json, Modal, NotFound, Spinner, useLoad, useThrottled } from "../components/common";
import { journeyKindText } from "../components/taskwords";
import { Link, navigate } from "../router";

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
          <p>
            A board shows entities (leads, customers) moving through sections as runs progress. Create one with <strong>New board</strong>{" "}
            (or <code>POST /api/v1/boards</code>), then choose it on a flow.
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
  // The search is read through a ref so that a new search keeps the board
  // on screen until its answer arrives.
  const query = useRef("");
  const [q, setQ] = useState("");
  const { data, error, loading, reload } = useLoad(
    () => api<Board>("GET", `/boards/${boardId}${query.current ? `?q=${encodeURIComponent(query.current)}` : ""}`),
    [boardId],
  );
  useEffect(() => {
    const t = setTimeout(() => {
      if (query.current === q.trim()) return;
      query.current = q.trim();
      reload();
    }, 250);
    return () => clearTimeout(t);
  }, [q, reload]);
  const [editing, setEditing] = useState(false);
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
      `/boards/${boardId}?section_id=${encodeURIComponent(sectionId)}&cursor=${encodeURIComponent(cursor)}${query.current ? `&q=${encodeURIComponent(query.current)}` : ""}`,
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
              {[...s.entities, ...(extra[s.id]?.entities ?? [])].map((e) => (
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
      {entityId && (
        <Journey
          entityId={entityId}
          sections={data.sections}
          sectionName={sectionName}
          onClose={() => navigate(`/boards/${boardId}`)}
          onMoved={reload}
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

// BoardSettings renames the board, chooses what its cards show, adds,
// renames, reorders and deletes sections, and deletes the board. Every
// change is sent at once; the server's refusal is shown in its words.
function BoardSettings({ board, onClose, onChanged }: { board: Board; onClose: () => void; onChanged: () => void }) {
  const [name, setName] = useState(board.name);
  const [fields, setFields] = useState((board.card_fields ?? []).join(", "));
  const [names, setNames] = useState<Record<string, string>>(() => Object.fromEntries(board.sections.map((s) => [s.id, s.name])));
  const [newSection, setNewSection] = useState("");
  const [moveTo, setMoveTo] = useState<Record<string, string>>({});
  const [err, setErr] = useState<string | null>(null);
  useEffect(() => setNames(Object.fromEntries(board.sections.map((s) => [s.id, s.name]))), [board]);
  async function act(fn: () => Promise<unknown>) {
    setErr(null);
    try {
      await fn();
      onChanged();
    } catch (x) {
      setErr(describe(x));
    }
  }
  const base = `/boards/${board.id}`;
  const saveBoard = (e: FormEvent) => {
    e.preventDefault();
    const cf = fields
      .split(",")
      .map((f) => f.trim())
      .filter(Boolean);
    void act(() => api("PATCH", base, { name, card_fields: cf }));
  };
  return (
    <Modal title={`Edit board — ${board.name}`} onClose={onClose}>
      <form onSubmit={saveBoard} className="board-settings">
        <div className="field">
          <label htmlFor="board-rename">Name</label>
          <input id="board-rename" value={name} maxLength={200} onChange={(e) => setName(e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor="board-card-fields">Metadata shown on cards (keys, comma-separated; empty: the first three)</label>
          <input id="board-card-fields" value={fields} placeholder="score, plan" onChange={(e) => setFields(e.target.value)} />
        </div>
        <button type="submit" className="btn primary small" data-action="save-board">
          Save
        </button>
      </form>
      <h3>Sections</h3>
      <ol className="section-edit">
        {board.sections.map((s, i) => (
          <li key={s.id} data-section-edit={s.id}>
            <div className="row">
              <input
                aria-label={`Name of section ${s.id}`}
                value={names[s.id] ?? ""}
                maxLength={200}
                onChange={(e) => setNames({ ...names, [s.id]: e.target.value })}
              />
              <button
                type="button"
                className="btn small"
                data-action="rename-section"
                disabled={!names[s.id]?.trim() || names[s.id] === s.name}
                onClick={() => void act(() => api("PATCH", `${base}/sections/${encodeURIComponent(s.id)}`, { name: names[s.id] }))}
              >
                Rename
              </button>
              <SLAField sectionId={s.id} name={s.name} value={s.sla_seconds ?? null} onSave={(v) => void act(() => api("PATCH", `${base}/sections/${encodeURIComponent(s.id)}`, { sla_seconds: v }))} />
              <button
                type="button"
                className="btn small ghost"
                aria-label={`Move ${s.name} left`}
                disabled={i === 0}
                onClick={() => void act(() => api("PATCH", `${base}/sections/${encodeURIComponent(s.id)}`, { position: i - 1 }))}
              >
                ←
              </button>
              <button
                type="button"
                className="btn small ghost"
                aria-label={`Move ${s.name} right`}
                disabled={i === board.sections.length - 1}
                onClick={() => void act(() => api("PATCH", `${base}/sections/${encodeURIComponent(s.id)}`, { position: i + 1 }))}
              >
                →
              </button>
            </div>
            <div className="row">
              {s.count > 0 && (
                <select
                  aria-label={`Where the entities of ${s.name} go`}
                  value={moveTo[s.id] ?? ""}
                  onChange={(e) => setMoveTo({ ...moveTo, [s.id]: e.target.value })}
                >
                  <option value="">Its {s.count} entities go to…</option>
                  {board.sections
                    .filter((o) => o.id !== s.id)
                    .map((o) => (
                      <option key={o.id} value={o.id}>
                        {o.name}
                      </option>
                    ))}
                </select>
              )}
              <button
                type="button"
                className="btn small danger"
                data-action="delete-section"
                disabled={s.count > 0 && !moveTo[s.id]}
                title={s.count > 0 && !moveTo[s.id] ? "Choose where its entities go first" : undefined}
                onClick={() => {
                  if (!confirm(`Delete the section “${s.name}”?`)) return;
                  const mv = moveTo[s.id] ? `?move_to=${encodeURIComponent(moveTo[s.id])}` : "";
                  void act(() => api("DELETE", `${base}/sections/${encodeURIComponent(s.id)}${mv}`));
                }}
              >
                Delete section
              </button>
            </div>
          </li>
        ))}
      </ol>
      <form
        className="row"
        onSubmit={(e) => {
          e.preventDefault();
          const n = newSection.trim();
          if (!n) return;
          void act(async () => {
            await api("POST", `${base}/sections`, { id: sectionID(n, board.sections.map((s) => s.id)), name: n });
            setNewSection("");
          });
        }}
      >
        <input id="new-section-name" placeholder="New section name" value={newSection} maxLength={200} onChange={(e) => setNewSection(e.target.value)} />
        <button type="submit" className="btn small" data-action="add-section" disabled={!newSection.trim()}>
          Add section
        </button>
      </form>
      {err && (
        <p className="field-error" role="alert" data-board-error>
          {err}
        </p>
      )}
      <hr />
      <button
        type="button"
        className="btn danger"
        data-action="delete-board"
        onClick={() => {
          if (!confirm(`Delete the board “${board.name}” with its sections and entities? This cannot be undone.`)) return;
          void (async () => {
            setErr(null);
            try {
              await api("DELETE", base);
              navigate("/boards");
            } catch (x) {
              setErr(describe(x));
            }
          })();
        }}
      >
        Delete board
      </button>
      <p className="muted small">
        A board a flow, a webhook trigger or an unfinished run uses is not deleted: the refusal says which.
      </p>
    </Modal>
  );
}

// EntityEdit edits an entity's name, email, type and metadata, or deletes it.
function EntityEdit({ entity, onSaved, onDeleted }: { entity: Entity; onSaved: () => void; onDeleted: () => void }) {
  const [name, setName] = useState(entity.name);
  const [email, setEmail] = useState(entity.email ?? "");
  const [type, setType] = useState(entity.type);
  const [meta, setMeta] = useState(JSON.stringify(entity.metadata ?? {}, null, 2));
  const [err, setErr] = useState<string | null>(null);
  async function save(e: FormEvent) {
    e.preventDefault();
    setErr(null);
    let metadata: unknown;
    try {
      metadata = JSON.parse(meta || "{}");
    } catch {
      setErr("Metadata must be a JSON object");
      return;
    }
    try {
      await api("PATCH", `/entities/${entity.id}`, { name, email, type, metadata });
      onSaved();
    } catch (x) {
      setErr(describe(x));
    }
  }
  async function remove() {
    if (!confirm(`Delete “${entity.name}” and its journey?`)) return;
    setErr(null);
    try {
      await api("DELETE", `/entities/${entity.id}`);
      onDeleted();
    } catch (x) {
      setErr(describe(x));
    }
  }
  return (
    <details className="entity-edit">
      <summary>Edit or delete</summary>
      <form onSubmit={(e) => void save(e)}>
        <div className="field">
          <label htmlFor="entity-name">Name</label>
          <input id="entity-name" value={name} required maxLength={200} onChange={(e) => setName(e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor="entity-email">Email</label>
          <input id="entity-email" type="email" value={email} maxLength={200} onChange={(e) => setEmail(e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor="entity-type">Type</label>
          <input id="entity-type" value={type} required maxLength={200} onChange={(e) => setType(e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor="entity-metadata">Metadata (JSON)</label>
          <textarea id="entity-metadata" rows={4} className="mono" value={meta} onChange={(e) => setMeta(e.target.value)} />
        </div>
        <div className="row-buttons">
          <button type="submit" className="btn primary small" data-action="save-entity">
            Save
          </button>
          <button type="button" className="btn danger small" data-action="delete-entity" onClick={() => void remove()}>
            Delete entity
          </button>
        </div>
        {err && (
          <p className="field-error" role="alert" data-entity-error>
            {err}
          </p>
        )}
      </form>
    </details>
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
                  <strong data-journey-kind={j.kind}>{journeyKindText(j) || j.kind.replace(/_/g, " ")}</strong>
                  {j.to_section_id && !journeyKindText(j) && (j.from_section_id && j.from_section_id !== j.to_section_id ? (
                    <>
                      {" "}
                      {name(j.from_section_id)} → {name(j.to_section_id)}
                    </>
                  ) : (
                    <> in {name(j.to_section_id)}</>
                  ))}
                  {j.complete_as && <span className={`tag tag-${j.complete_as}`}>{j.complete_as}</span>}
                  {j.actor && <span className="muted small"> by {j.actor}</span>}
                  {j.comment && (
                    <q className="journey-comment" data-journey-comment>
                      {j.comment}
                    </q>
                  )}
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
          {can(currentMe().me, "board") && (
            <EntityEdit
              key={data.updated_at}
              entity={data}
              onSaved={() => {
                reload();
                onMoved();
              }}
              onDeleted={() => {
                onMoved();
                onClose();
              }}
            />
          )}
        </div>
      )}
    </Modal>
  );
}

// SLAField sets a section's SLA in hours (empty: none).
function SLAField({ sectionId, name, value, onSave }: { sectionId: string; name: string; value: number | null; onSave: (seconds: number) => void }) {
  const [hours, setHours] = useState(value ? String(value / 3600) : "");
  const seconds = hours.trim() === "" ? 0 : Math.round(Number(hours) * 3600);
  const valid = hours.trim() === "" || (Number.isFinite(Number(hours)) && seconds >= 1 && seconds <= 31536000);
  return (
    <span className="sla-field">
      <input
        aria-label={`SLA of ${name} in hours`}
        data-sla-input={sectionId}
        type="number"
        min={0}
        step="any"
        placeholder="SLA h"
        value={hours}
        onChange={(e) => setHours(e.target.value)}
      />
      <button type="button" className="btn small" data-action="save-sla" disabled={!valid || seconds === (value ?? 0)} onClick={() => onSave(seconds)}>
        Set SLA
      </button>
    </span>
  );
}
