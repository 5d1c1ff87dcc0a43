// TriggerSettings is the side panel of a trigger's start node clicked on
// the canvas: the trigger's card, saved at once apart from the flow.
import type { CSSProperties } from "react";
import type { Trigger } from "../../api";
import { Link } from "../../router";
import { TriggerPanel, triggerTitle } from "../Triggers";

export function TriggerSettings({
  trigger,
  flowId,
  notice,
  setNotice,
  onChanged,
}: {
  trigger: Trigger;
  flowId: string | null;
  notice: string | null;
  setNotice: (m: string | null) => void;
  onChanged: () => void;
}) {
  return (
    <div className="settings trigger-settings" aria-label="Trigger settings" data-trigger-settings={trigger.id}>
      <h2>
        <span className="type-chip" style={{ "--c": "#64748b" } as CSSProperties}>
          ⚡ {triggerTitle(trigger).kind}
        </span>{" "}
        trigger
      </h2>
      <p className="muted small">
        Starts this flow: its settings are saved at once, apart from the flow's Save.{" "}
        <Link to={`/flows/${flowId}/triggers`}>All triggers</Link>
      </p>
      {notice && (
        <div className="banner ok" role="status">
          {notice}
        </div>
      )}
      <TriggerPanel
        key={trigger.id}
        t={trigger}
        onChanged={onChanged}
        onNotice={setNotice}
      />
    </div>
  );
}
