// A board's settings: its name, sections (with their SLAs) and card fields.
import { useEffect, useRef, useState, type FormEvent } from "react";
import { api, describe, type Board } from "../../api";
import { Modal } from "../../components/common";
import { navigate } from "../../router";
import { sectionID } from "../Boards";

// BoardSettings renames the board, chooses what its cards show, adds,
// renames, reorders and deletes sections, and deletes the board. Every
// change is sent at once; the server's refusal is shown in its words.
export function BoardSettings({ board, onClose, onChanged }: { board: Board; onClose: () => void; onChanged: () => void }) {
  const [name, setName] = useState(board.name);
  const [fields, setFields] = useState((board.card_fields ?? []).join(", "));
  const [names, setNames] = useState<Record<string, string>>(() => Object.fromEntries(board.sections.map((s) => [s.id, s.name])));
  const [newSection, setNewSection] = useState("");
  const [moveTo, setMoveTo] = useState<Record<string, string>>({});
  const [err, setErr] = useState<string | null>(null);
  // The board is read again at every move on it (a live board): a name
  // being typed is kept, the others follow the server's.
  const read = useRef(board.sections);
  useEffect(() => {
    const before = read.current;
    read.current = board.sections;
    setNames((typed) => sectionNames(board.sections, before, typed));
  }, [board]);
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

// sectionNames is what the sections' name fields show once the board is
// read again: the name read, except where the person typed another than
// the one read before (an edit not yet sent).
export function sectionNames(
  sections: { id: string; name: string }[],
  before: { id: string; name: string }[],
  typed: Record<string, string>,
): Record<string, string> {
  const was: Record<string, string> = Object.fromEntries(before.map((s) => [s.id, s.name]));
  return Object.fromEntries(sections.map((s) => [s.id, s.id in typed && s.id in was && typed[s.id] !== was[s.id] ? typed[s.id] : s.name]));
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
