// A node's id and label. The id draft is the shell's, so that it lasts
// while the other tabs are shown.
import { Field } from "./shared";

export function NameFields({
  idDraft,
  setIdDraft,
  idError,
  idNote,
  commitId,
  label,
  onLabel,
}: {
  idDraft: string;
  setIdDraft: (v: string) => void;
  idError: string | null;
  // idNote: what the last rename changed besides the id.
  idNote: string | null;
  commitId: () => void;
  label: string;
  onLabel: (v: string) => void;
}) {
  return (
    <>
      <Field label="Node id" id="node-id" error={idError} hint={idNote ?? undefined}>
        <input id="node-id" value={idDraft} onChange={(e) => setIdDraft(e.target.value)} onBlur={commitId} onKeyDown={(e) => e.key === "Enter" && commitId()} />
      </Field>
      <Field label="Label" id="node-label">
        <input id="node-label" value={label} onChange={(e) => onLabel(e.target.value)} />
      </Field>
    </>
  );
}
