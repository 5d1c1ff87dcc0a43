// ExpressionInput is every expression field of the editor (a Transform's
// expression, an edge's condition): CodeMirror with completions once its
// chunk has loaded, the plain textarea until then. The textarea stays the
// field's value (what its label names); focusing it focuses the editor.
import { lazy, Suspense, useRef, useState } from "react";
import type { Scope } from "./scope";
import { setExprTarget, spliceAt } from "./exprTarget";

const Editor = lazy(() => import("./ExprEditor"));

export interface ExpressionInputProps {
  id: string;
  label: string;
  value: string;
  onChange: (v: string) => void;
  scope: Scope | null;
  rows?: number;
  placeholder?: string;
  invalid?: boolean;
  describedBy?: string;
  language?: "javascript";
}

export function ExpressionInput({ id, label, value, onChange, scope, rows = 3, placeholder, invalid, describedBy, language }: ExpressionInputProps) {
  const [focusEditor, setFocusEditor] = useState<(() => void) | null>(null);
  const ta = useRef<HTMLTextAreaElement>(null);
  const ready = !!focusEditor;
  return (
    <div className="expr-input" data-expr-input={id} data-ready={ready ? "true" : "false"}>
      <textarea
        ref={ta}
        id={id}
        className={ready ? "mono expr-source" : "mono"}
        rows={rows}
        spellCheck={false}
        placeholder={placeholder}
        value={value}
        tabIndex={ready ? -1 : 0}
        aria-hidden={ready ? true : undefined}
        aria-invalid={!!invalid}
        aria-describedby={describedBy}
        onChange={(e) => onChange(e.target.value)}
        onFocus={() => {
          if (focusEditor) return focusEditor();
          setExprTarget({ insert: (text) => ta.current && onChange(spliceAt(ta.current, text)) });
        }}
      />
      <Suspense fallback={null}>
        <Editor
          value={value}
          onChange={onChange}
          scope={scope}
          label={label}
          placeholder={placeholder}
          rows={rows}
          invalid={invalid}
          describedBy={describedBy}
          language={language}
          onReady={(f) => setFocusEditor(f ? () => f : null)}
        />
      </Suspense>
    </div>
  );
}
