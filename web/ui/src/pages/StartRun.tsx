import { useState, type FormEvent } from "react";
import { api, describe, type Run } from "../api";
import { Modal } from "../components/common";
import { navigate } from "../router";

// StartRunDialog starts a run by hand with an input and, optionally, an
// entity: an existing one (its id) or a new one made on the flow's board.
export function StartRunDialog({ flowId, dirty, boardId = null, onClose }: { flowId: string; dirty?: boolean; boardId?: string | null; onClose: () => void }) {
  const [input, setInput] = useState("{\n  \n}");
  const [entity, setEntity] = useState<"none" | "existing" | "new">("none");
  const [entityId, setEntityId] = useState("");
  const [entityName, setEntityName] = useState("");
  const [entityType, setEntityType] = useState("lead");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  async function submit(e: FormEvent) {
    e.preventDefault();
    let parsed: unknown;
    try {
      parsed = input.trim() ? JSON.parse(input) : {};
    } catch (err) {
      setError(`The input is not valid JSON: ${(err as Error).message}`);
      return;
    }
    if (entity === "existing" && !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(entityId.trim())) {
      setError("The entity id must be a whole id (a UUID).");
      return;
    }
    if (entity === "new" && (!entityName.trim() || !entityType.trim())) {
      setError("A new entity needs a name and a type.");
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const body: Record<string, unknown> = { input: parsed };
      if (entity === "existing") body.entity_id = entityId.trim().toLowerCase();
      if (entity === "new" && boardId) {
        const made = await api<{ id: string }>("POST", "/entities", { board_id: boardId, type: entityType.trim(), name: entityName.trim() });
        body.entity_id = made.id;
        setEntity("existing");
        setEntityId(made.id);
      }
      const run = await api<Run>("POST", `/flows/${flowId}/runs`, body);
      navigate(`/runs/${run.id}`);
    } catch (err) {
      setError(describe(err));
      setBusy(false);
    }
  }
  return (
    <Modal title="Start a run" onClose={onClose}>
      <form onSubmit={submit}>
        {dirty && <p className="banner warn">You have unsaved changes: the run uses the last saved version.</p>}
        <label htmlFor="run-input">Input (JSON)</label>
        <textarea id="run-input" className="mono" rows={10} value={input} onChange={(e) => setInput(e.target.value)} aria-invalid={!!error} />
        <fieldset className="start-entity">
          <legend>Entity (optional)</legend>
          <div className="row">
            {(
              [
                ["none", "None"],
                ["existing", "An existing one"],
                ...(boardId ? [["new", "A new one on the flow's board"]] : []),
              ] as [typeof entity, string][]
            ).map(([v, l]) => (
              <label key={v} className="radio">
                <input type="radio" name="run-entity" value={v} checked={entity === v} onChange={() => setEntity(v)} /> {l}
              </label>
            ))}
          </div>
          {entity === "existing" && (
            <>
              <label htmlFor="run-entity-id">Entity id</label>
              <input id="run-entity-id" className="mono" value={entityId} onChange={(e) => setEntityId(e.target.value)} placeholder="its id: open its card on the board" />
            </>
          )}
          {entity === "new" && (
            <>
              <label htmlFor="run-entity-name">Name</label>
              <input id="run-entity-name" value={entityName} onChange={(e) => setEntityName(e.target.value)} />
              <label htmlFor="run-entity-type">Type</label>
              <input id="run-entity-type" value={entityType} onChange={(e) => setEntityType(e.target.value)} />
            </>
          )}
        </fieldset>
        {error && (
          <p className="field-error" role="alert">
            {error}
          </p>
        )}
        <div className="modal-actions">
          <button type="button" className="btn ghost" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="btn primary" disabled={busy}>
            {busy ? "Starting…" : "Start run"}
          </button>
        </div>
      </form>
    </Modal>
  );
}
