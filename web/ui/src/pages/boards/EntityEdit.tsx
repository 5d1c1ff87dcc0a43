// An entity's card opened: its fields edited, and its journey through the
// board's sections.
import { useEffect, useRef, useState, type FormEvent } from "react";
import { api, can, currentMe, describe, type Entity } from "../../api";
import { ago, ErrorBox, Json, Modal, Spinner, useLoad } from "../../components/common";
import { journeyKindText } from "../../components/taskwords";
import { Link } from "../../router";

// EntityEdit edits an entity's name, email, type and metadata, or deletes it.
export function EntityEdit({ entity, onSaved, onDeleted }: { entity: Entity; onSaved: () => void; onDeleted: () => void }) {
  const [name, setName] = useState(entity.name);
  const [email, setEmail] = useState(entity.email ?? "");
  const [type, setType] = useState(entity.type);
  const [meta, setMeta] = useState(JSON.stringify(entity.metadata ?? {}, null, 2));
  // What the form showed when opened (or last saved).
  const [opened, setOpened] = useState<{ name: string; email: string; type: string; metadata: unknown }>(() => ({
    name: entity.name,
    email: entity.email ?? "",
    type: entity.type,
    metadata: entity.metadata ?? {},
  }));
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
    // Only what the person changed: the entity may have changed meanwhile
    // (a run's step sets its metadata), and what they did not touch is
    // not written back as it was when the form opened.
    const changed: Record<string, unknown> = {};
    if (name !== opened.name) changed.name = name;
    if (email !== opened.email) changed.email = email;
    if (type !== opened.type) changed.type = type;
    if (JSON.stringify(metadata) !== JSON.stringify(opened.metadata)) changed.metadata = metadata;
    try {
      if (Object.keys(changed).length > 0) await api("PATCH", `/entities/${entity.id}`, changed);
      setOpened({ name, email, type, metadata });
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

export function Journey({
  entityId,
  sections,
  sectionName,
  onClose,
  onMoved,
  board,
}: {
  entityId: string;
  sections: { id: string; name: string }[];
  sectionName: Record<string, string>;
  onClose: () => void;
  onMoved: () => void;
  // board: the board as last read (a new object at each reading).
  board: unknown;
}) {
  // pages: how many pages of the journey (oldest first: the latest moves
  // are on the last) are shown; Show later moves adds one, and the entity
  // read again reads as many.
  const pages = useRef(1);
  const { data, error, loading, reload } = useLoad(async () => {
    const e = await api<Entity>("GET", `/entities/${entityId}`);
    const journey = [...(e.journey ?? [])];
    let next = e.journey_next_cursor ?? null;
    for (let i = 1; i < pages.current && next; i++) {
      const page: Entity = await api<Entity>("GET", `/entities/${entityId}?cursor=${encodeURIComponent(next)}`);
      journey.push(...(page.journey ?? []).filter((j) => !journey.some((k) => k.id === j.id)));
      next = page.journey_next_cursor ?? null;
    }
    return { ...e, journey, journey_next_cursor: next };
  }, [entityId]);
  // The board behind is read again at every move on it: the entity is too,
  // so that where it is now and its journey follow.
  const seen = useRef(board);
  useEffect(() => {
    if (seen.current === board) return;
    seen.current = board;
    reload();
  }, [board, reload]);
  const [target, setTarget] = useState("");
  const [moveError, setMoveError] = useState<string | null>(null);
  const next = data?.journey_next_cursor ?? null;
  function showLater() {
    pages.current++;
    reload();
  }
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
            {data.email ? ` · ${data.email}` : ""} · now in <strong>{name(data.section_id)}</strong> · id{" "}
            <span className="mono" data-entity-id>
              {data.id}
            </span>
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
          {next && (
            <button type="button" className="btn ghost small" data-action="journey-more" onClick={showLater}>
              Show later moves
            </button>
          )}
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
              key={data.id}
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
