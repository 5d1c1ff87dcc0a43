import { useState, type FormEvent } from "react";
import { api, describe, type Run } from "../api";
import { Modal } from "../components/common";
import { navigate } from "../router";

export function StartRunDialog({ flowId, dirty, onClose }: { flowId: string; dirty?: boolean; onClose: () => void }) {
  const [input, setInput] = useState("{\n  \n}");
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
    setBusy(true);
    setError(null);
    try {
      const run = await api<Run>("POST", `/flows/${flowId}/runs`, { input: parsed });
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
