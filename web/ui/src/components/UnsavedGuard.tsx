import { useEffect, useRef, useState } from "react";
import { navigate, setBlocker } from "../router";
import { Modal } from "./common";

// UnsavedGuard keeps unsaved work from being lost: while dirty, leaving
// the page in the app (a nav link, Back, the version menu) asks first —
// Save, Discard or Stay — and closing or reloading the tab raises the
// browser's own prompt (beforeunload). onSave answers whether it saved;
// a failed save keeps the person on the page, its problems shown.
export function UnsavedGuard({ dirty, onSave }: { dirty: boolean; onSave: () => Promise<boolean> }) {
  const [pending, setPending] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);
  const save = useRef(onSave);
  save.current = onSave;

  useEffect(() => {
    if (!dirty) return;
    const unload = (e: BeforeUnloadEvent) => {
      e.preventDefault();
      e.returnValue = ""; // older browsers ask only when this is set
    };
    window.addEventListener("beforeunload", unload);
    const unblock = setBlocker((to) => {
      setPending(to);
      return true;
    });
    return () => {
      window.removeEventListener("beforeunload", unload);
      unblock();
    };
  }, [dirty]);

  if (pending === null) return null;
  const stay = () => setPending(null);
  const go = () => {
    const to = pending;
    setPending(null);
    navigate(to, false, true);
  };
  return (
    <Modal title="You have unsaved changes" onClose={stay}>
      <div data-unsaved-dialog>
        <p>This flow has changes that are not saved yet. Save them before you leave, or discard them?</p>
        <div className="modal-actions">
          <button type="button" className="btn ghost" data-action="unsaved-stay" onClick={stay}>
            Stay
          </button>
          <button type="button" className="btn danger" data-action="unsaved-discard" onClick={go}>
            Discard
          </button>
          <button
            type="button"
            className="btn primary"
            data-action="unsaved-save"
            disabled={saving}
            onClick={async () => {
              setSaving(true);
              const ok = await save.current().finally(() => setSaving(false));
              if (ok) go();
              else stay();
            }}
          >
            {saving ? "Saving…" : "Save"}
          </button>
        </div>
      </div>
    </Modal>
  );
}
