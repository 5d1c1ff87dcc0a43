// BodyField is a node's body field (an HTTP node's request body, a
// Respond node's answer): none, JSON or text, with the check made as it is
// typed and the server's messages about it. A path clicked in the data
// panel goes in as {{ path }}.
import { useTemplateTarget } from "../../components/exprTarget";
import { useBodyDraft } from "./body";
import { ServerProblems, type FieldsProps } from "./shared";

export function BodyField({
  id,
  name,
  data,
  onChange,
  problemsAt,
  nodeId,
  placeholder,
  hint,
  note = "",
  validHint = false,
}: FieldsProps & {
  // id is the textarea's; name is its radios' (the body's kind).
  id: string;
  name: string;
  placeholder: { json: string; text: string };
  hint: { json: string; text: string };
  // note is said after the hint while there is a body.
  note?: string;
  // validHint says "Valid JSON." under a JSON body that parses.
  validHint?: boolean;
}) {
  const { mode, draft, jsonError, switchBody, typeBody } = useBodyDraft(data, onChange);
  const problems = problemsAt("body");
  const target = useTemplateTarget<HTMLTextAreaElement>((v) => typeBody(v));
  return (
    <div className="field body-field">
      <label htmlFor={id}>Body</label>
      <div className="tabs" role="radiogroup" aria-label="Body kind">
        {(["none", "json", "text"] as const).map((m) => (
          <label key={m} className={mode === m ? "active" : ""}>
            <input type="radio" name={name} value={m} checked={mode === m} onChange={() => switchBody(m)} /> {m === "none" ? "none" : m === "json" ? "JSON" : "text"}
          </label>
        ))}
      </div>
      {mode !== "none" && (
        <textarea
          id={id}
          ref={target.ref}
          onFocus={target.onFocus}
          className="mono"
          rows={5}
          spellCheck={false}
          placeholder={mode === "json" ? placeholder.json : placeholder.text}
          value={draft}
          aria-invalid={!!jsonError || problems.some((p) => !p.stale)}
          aria-describedby={`${id}-help`}
          onChange={(e) => typeBody(e.target.value)}
        />
      )}
      <p className="hint" id={`${id}-help`}>
        {mode === "json" ? hint.json : mode === "text" ? hint.text : "No body."}
        {mode !== "none" ? note : ""}
      </p>
      {jsonError && (
        <p className="field-error" role="alert" data-check="local" data-json-error>
          Not valid JSON: {jsonError}. The saved body is the last valid one until this parses.
        </p>
      )}
      {validHint && mode === "json" && draft.trim() && !jsonError && (
        <p className="hint ok-text" data-json-ok>
          Valid JSON.
        </p>
      )}
      <ServerProblems problems={problems} id={nodeId} />
    </div>
  );
}
