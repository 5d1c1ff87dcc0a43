// The card of a trigger of a kind this page does not show in detail (an
// event trigger): listed all the same, so none is hidden.
import type { EventTrigger } from "../../api";
import { ago } from "../../components/common";
import { TriggerCard, useTriggerAct, type TriggerCardProps } from "./TriggerCard";

export type OtherTrigger = EventTrigger;

export function OtherCard({ t, ...props }: { t: OtherTrigger } & TriggerCardProps) {
  const act = useTriggerAct(props);
  return (
    <TriggerCard
      id={t.id}
      kind="other"
      disabled={t.enabled === false}
      attrs={{ "data-kind": t.kind }}
      act={act}
      remove={{ question: `Delete this ${t.kind} trigger?`, notice: "Trigger deleted.", lock: false }}
      head={
        <>
          <strong>{t.kind}</strong>
          {t.name && <code>{t.name}</code>}
          {t.enabled !== undefined && <span className={`status ${t.enabled ? "status-enabled" : "status-disabled"}`}>{t.enabled ? "enabled" : "disabled"}</span>}
        </>
      }
    >
      {t.created_at && <p className="muted small">Created {ago(t.created_at)}</p>}
    </TriggerCard>
  );
}
