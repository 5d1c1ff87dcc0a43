// The expression field being edited: the one focused last. The data
// panel inserts a clicked path into it, at its cursor.
import { useEffect, useRef, type RefObject } from "react";

export interface ExprTarget {
  // insert puts text at the cursor (replacing a selection).
  insert: (text: string) => void;
  // template: the field holds text with {{ expr }} templates.
  template?: boolean;
}

let current: ExprTarget | null = null;
const listeners = new Set<() => void>();

export function setExprTarget(t: ExprTarget | null) {
  current = t;
  listeners.forEach((f) => f());
}

export function exprTarget(): ExprTarget | null {
  return current;
}

export function onExprTarget(f: () => void): () => void {
  listeners.add(f);
  return () => listeners.delete(f);
}

// insertPath puts path into the field being edited: in a template field
// as {{ path }}. It answers false when no field is being edited.
export function insertPath(path: string): boolean {
  if (!current) return false;
  current.insert(current.template ? `{{ ${path} }}` : path);
  return true;
}

// spliceAt inserts text into a plain input or textarea at its cursor and
// answers the new value; the cursor goes after the text.
export function spliceAt(el: HTMLInputElement | HTMLTextAreaElement, text: string): string {
  const v = el.value;
  const a = el.selectionStart ?? v.length;
  const b = el.selectionEnd ?? a;
  const next = v.slice(0, a) + text + v.slice(b);
  const at = a + text.length;
  requestAnimationFrame(() => {
    el.focus();
    el.setSelectionRange(at, at);
  });
  return next;
}

// useTemplateTarget makes a plain input or textarea holding {{ }}
// templates a target: focus it, then click a path in the data panel.
export function useTemplateTarget<T extends HTMLInputElement | HTMLTextAreaElement>(onChange: (v: string) => void): { ref: RefObject<T | null>; onFocus: () => void } {
  const ref = useRef<T | null>(null);
  const change = useRef(onChange);
  change.current = onChange;
  const target = useRef<ExprTarget>({
    template: true,
    insert: (text) => {
      if (ref.current) change.current(spliceAt(ref.current, text));
    },
  });
  useEffect(
    () => () => {
      if (current === target.current) setExprTarget(null);
    },
    [],
  );
  return { ref, onFocus: () => setExprTarget(target.current) };
}
