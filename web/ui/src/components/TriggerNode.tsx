// TriggerNode draws one of a flow's triggers (a webhook, a schedule, a
// broker or event trigger) as a start node left of the first steps. It
// is not part of the graph: never saved, moved, deleted or connected by
// hand; a click opens the trigger's settings in the side panel.
import { Handle, Position, type NodeProps } from "@xyflow/react";

export const TRIGGER_PREFIX = "trigger:";
export const TRIGGER_SIZE = { width: 200, height: 58 };

export function TriggerNode({ data }: NodeProps) {
  const d = data as { kind: string; what: string; enabled?: boolean; triggerId: string };
  return (
    <div className={`trigger-node ${d.enabled === false ? "disabled" : ""}`} data-trigger-node={d.triggerId} data-kind={d.kind} title="A trigger: click to edit it">
      <span className="trigger-node-kind">⚡ {d.kind}</span>
      <span className="trigger-node-what mono">{d.what}</span>
      <Handle type="source" position={Position.Right} isConnectable={false} />
    </div>
  );
}
