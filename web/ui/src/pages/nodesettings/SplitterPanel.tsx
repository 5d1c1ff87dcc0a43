// The settings of a Splitter node: the array whose items run in parallel.
import { Field, type PanelProps } from "./shared";

export function SplitterPanel({ data, set }: PanelProps) {
  return (
    <Field label="Array path" id="node-array" hint="A gjson path into the input, e.g. contacts or lead.contacts. One parallel path per item.">
      <input id="node-array" className="mono" value={data.arrayPath ?? ""} onChange={(e) => set(["arrayPath"])(e.target.value)} />
    </Field>
  );
}
