// A body field (an HTTP node's request body, a Respond node's answer):
// none, JSON or text.
import { useState } from "react";
import { put } from "./shared";

type BodyMode = "none" | "json" | "text";

function bodyMode(body: unknown): BodyMode {
  if (body === undefined) return "none";
  return typeof body === "string" ? "text" : "json";
}

// useBodyDraft is a body field's state (an HTTP node's request body, a
// Respond node's answer): none, JSON (checked as it is typed; the saved
// body changes only while it parses) or text (may hold templates).
export function useBodyDraft(data: Record<string, any>, onChange: (d: Record<string, any>) => void) {
  const [mode, setMode] = useState<BodyMode>(() => bodyMode(data.body));
  const [draft, setDraft] = useState<string>(() =>
    data.body === undefined ? "" : typeof data.body === "string" ? data.body : JSON.stringify(data.body, null, 2),
  );
  const jsonError = mode === "json" && draft.trim() ? checkJSON(draft) : null;
  const switchBody = (m: BodyMode) => {
    setMode(m);
    if (m === "none") return onChange(put(data, "body", undefined));
    if (m === "text") return onChange(put(data, "body", draft));
    if (draft.trim() && !checkJSON(draft)) onChange(put(data, "body", JSON.parse(draft)));
    else onChange(put(data, "body", undefined));
  };
  const typeBody = (t: string) => {
    setDraft(t);
    if (mode === "text") onChange({ ...data, body: t });
    else if (!t.trim()) onChange(put(data, "body", undefined));
    else if (!checkJSON(t)) onChange({ ...data, body: JSON.parse(t) });
  };
  return { mode, draft, jsonError, switchBody, typeBody };
}

// checkJSON says what is wrong with a JSON text, or null.
export function checkJSON(text: string): string | null {
  try {
    JSON.parse(text);
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}
