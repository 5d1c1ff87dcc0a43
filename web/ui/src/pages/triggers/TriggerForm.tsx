// The parts every trigger's form shares (a schedule's, a webhook's, a
// broker trigger's): its save, the server's messages by field, and the
// Save and Cancel buttons (FormErrors, in common, shows the rest).
import { useState } from "react";
import { ApiError, describe, type Problem } from "../../api";

export function useTriggerForm() {
  const [problems, setProblems] = useState<Problem[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // save runs fn (the POST or PATCH), then done; a 422's messages go
  // under their fields, any error in the form's error.
  async function save(fn: () => Promise<unknown>, done: () => void) {
    setBusy(true);
    setError(null);
    try {
      await fn();
      setProblems([]);
      done();
    } catch (err) {
      if (err instanceof ApiError && err.details.length) {
        setProblems(err.details);
        setError(`Not saved: ${err.message}.`);
      } else {
        setProblems([]);
        setError(`Not saved: ${describe(err)}`);
      }
    } finally {
      setBusy(false);
    }
  }
  // at is the messages about field; msgs shows them under it.
  const at = (field: string) => problems.filter((x) => x.path === field);
  const msgs = (field: string) =>
    at(field).map((x, i) => (
      <p key={i} className="field-error" role="alert" data-field-error={field}>
        {x.message}
      </p>
    ));
  // clear drops the messages about field (once it is edited).
  const clear = (field: string) => setProblems((ps) => ps.filter((x) => x.path !== field));
  return { problems, setProblems, error, setError, busy, save, at, msgs, clear };
}

// FormButtons is a form's submit button (saying busyLabel while busy)
// and Cancel.
export function FormButtons({
  action,
  label,
  busyLabel,
  busy,
  disabled,
  onCancel,
  cancelLocked,
}: {
  action: string;
  label: string;
  busyLabel: string;
  busy: boolean;
  disabled?: boolean;
  onCancel: () => void;
  // cancelLocked: Cancel waits while busy.
  cancelLocked?: boolean;
}) {
  return (
    <div className="row-buttons">
      <button type="submit" className="btn primary" data-action={action} disabled={busy || !!disabled}>
        {busy ? busyLabel : label}
      </button>
      <button type="button" className="btn" onClick={onCancel} disabled={cancelLocked ? busy : undefined}>
        Cancel
      </button>
    </div>
  );
}
