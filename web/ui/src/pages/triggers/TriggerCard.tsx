// TriggerCard is one trigger's card, whatever its kind: its head (what
// the kind shows, then the actions and Delete), what the kind shows
// below, the last action's error and what comes after it (an edit form).
// The kinds' own parts are in ScheduleTrigger, WebhookTrigger,
// BrokerTrigger and OtherTrigger.
import { useState, type ReactNode } from "react";
import { api, can, currentMe, describe } from "../../api";

export interface TriggerCardProps {
  onChanged: () => void;
  onNotice: (m: string | null) => void;
}

export interface TriggerAct {
  busy: boolean;
  error: string | null;
  // act runs fn (a call to the API), then says msg and reloads; its
  // error is shown on the card.
  act: (fn: () => Promise<unknown>, msg: string) => Promise<void>;
}

export function useTriggerAct({ onChanged, onNotice }: TriggerCardProps): TriggerAct {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  async function act(fn: () => Promise<unknown>, msg: string) {
    setBusy(true);
    setError(null);
    try {
      await fn();
      onNotice(msg);
      onChanged();
    } catch (err) {
      setError(describe(err));
    } finally {
      setBusy(false);
    }
  }
  return { busy, error, act };
}

export function TriggerCard({
  id,
  kind,
  disabled,
  attrs,
  act,
  head,
  actions,
  remove,
  children,
  after,
}: {
  id: string;
  // kind: the card's class (schedule, webhook, broker, other).
  kind: string;
  // disabled: whether the trigger is disabled (undefined: a kind that
  // cannot be).
  disabled?: boolean;
  attrs?: Record<`data-${string}`, string>;
  act: TriggerAct;
  head: ReactNode;
  actions?: ReactNode;
  // remove: what Delete asks and says; lock: Delete waits while an
  // action is under way.
  remove: { question: string; notice: string; lock: boolean };
  children?: ReactNode;
  after?: ReactNode;
}) {
  return (
    <li className={disabled === undefined ? `card trigger ${kind}` : `card trigger ${kind} ${disabled ? "disabled" : ""}`} data-trigger={id} {...attrs}>
      <div className="trigger-head">
        {head}
        {/* Changing a trigger (enable, edit, rotate its secret, delete) is
            an editor's: another role is not offered what the server refuses. */}
        {can(currentMe().me, "edit") && (
          <div className="bar-actions">
            {actions}
            <button
              type="button"
              className="btn small danger"
              data-action="delete"
              disabled={remove.lock ? act.busy : undefined}
              onClick={() => {
                if (confirm(remove.question)) void act.act(() => api("DELETE", `/triggers/${id}`), remove.notice);
              }}
            >
              Delete
            </button>
          </div>
        )}
      </div>
      {children}
      {act.error && (
        <p className="field-error" role="alert">
          {act.error}
        </p>
      )}
      {after}
    </li>
  );
}

// useTriggerEdit is a card's edit form, open or not; saved closes it,
// says msg and reloads.
export function useTriggerEdit({ onChanged, onNotice }: TriggerCardProps) {
  const [editing, setEditing] = useState(false);
  const saved = (msg: string) => {
    setEditing(false);
    onNotice(msg);
    onChanged();
  };
  return { editing, setEditing, saved };
}

// ToggleButton enables or disables a trigger (PATCH /triggers/{id}
// {enabled}), saying said.on or said.off.
export function ToggleButton({ id, enabled, act, said }: { id: string; enabled: boolean; act: TriggerAct; said: { on: string; off: string } }) {
  return (
    <button
      type="button"
      className="btn small"
      data-action={enabled ? "disable" : "enable"}
      disabled={act.busy}
      onClick={() => void act.act(() => api("PATCH", `/triggers/${id}`, { enabled: !enabled }), enabled ? said.off : said.on)}
    >
      {enabled ? "Disable" : "Enable"}
    </button>
  );
}

// EditButton opens or closes a trigger's edit form.
export function EditButton({ editing, setEditing, busy }: { editing: boolean; setEditing: (v: boolean) => void; busy?: boolean }) {
  return (
    <button type="button" className="btn small" data-action="edit" disabled={busy} onClick={() => setEditing(!editing)} aria-expanded={editing}>
      Edit
    </button>
  );
}
