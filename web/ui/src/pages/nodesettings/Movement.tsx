// Where a step moves the run's entity on a board.
import { Field } from "./shared";

// Movement edits one entity movement: the section to move to, how the
// step completes for the entity, and an optional new entity type.
export function Movement({
  legend,
  idp,
  value,
  sections,
  onChange,
}: {
  legend: string;
  idp: string;
  value: Record<string, any> | undefined;
  sections: { id: string; name: string }[] | null;
  onChange: (field: "targetSectionId" | "completeAs" | "setEntityType", v: string) => void;
}) {
  return (
    <fieldset>
      <legend>{legend}</legend>
      <Field label="Move to section" id={`${idp}-section`}>
        {sections ? (
          <select id={`${idp}-section`} value={value?.targetSectionId ?? ""} onChange={(e) => onChange("targetSectionId", e.target.value)}>
            <option value="">Do not move</option>
            {sections.map((s) => (
              <option key={s.id} value={s.id}>
                {s.name}
              </option>
            ))}
          </select>
        ) : (
          <input
            id={`${idp}-section`}
            placeholder="section id (choose a board for a list)"
            value={value?.targetSectionId ?? ""}
            onChange={(e) => onChange("targetSectionId", e.target.value)}
          />
        )}
      </Field>
      <Field label="Complete as" id={`${idp}-as`}>
        <select id={`${idp}-as`} value={value?.completeAs ?? ""} onChange={(e) => onChange("completeAs", e.target.value)}>
          <option value="">—</option>
          <option value="success">success</option>
          <option value="failure">failure</option>
          <option value="neutral">neutral</option>
        </select>
      </Field>
      <Field label="Set entity type" id={`${idp}-type`}>
        <input id={`${idp}-type`} placeholder="e.g. customer" value={value?.setEntityType ?? ""} onChange={(e) => onChange("setEntityType", e.target.value)} />
      </Field>
    </fieldset>
  );
}

// EntityMovements are a step's movements on success and on failure.
export function EntityMovements({
  data,
  sections,
  set,
}: {
  data: Record<string, any>;
  sections: { id: string; name: string }[] | null;
  set: (path: string[]) => (v: any) => void;
}) {
  return (
    <>
      {(["onSuccess", "onFailure"] as const).map((when) => (
        <Movement
          key={when}
          legend={`Entity movement ${when === "onSuccess" ? "on success" : "on failure"}`}
          idp={`node-${when}`}
          value={data.entityMovement?.[when]}
          sections={sections}
          onChange={(field, v) => set(["entityMovement", when, field])(v)}
        />
      ))}
    </>
  );
}
