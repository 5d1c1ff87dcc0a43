// JoinField says when a node with several forward edges in fires: once
// all arrived, or on the first (data.join "any").
import { Field } from "./shared";

export function JoinField({ join, incoming, onJoin }: { join: unknown; incoming: number; onJoin: (v: "any" | undefined) => void }) {
  return (
    <Field
      label="Fires"
      id="node-join"
      hint={
        join === "any"
          ? `On the first of its ${incoming} incoming steps to arrive, with that step's output; the other branches leading here are cancelled (a running worker is told, a step not started is skipped).`
          : "Once every incoming step has arrived (or been skipped), with their outputs merged."
      }
    >
      <select id="node-join" value={join === "any" ? "any" : "all"} onChange={(e) => onJoin(e.target.value === "any" ? "any" : undefined)}>
        <option value="all">when all incoming steps arrived</option>
        <option value="any">on the first arrival (cancel the others)</option>
      </select>
    </Field>
  );
}
