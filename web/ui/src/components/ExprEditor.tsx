// The expression editor proper: CodeMirror 6 with completions of the
// names an expression may use and of the fields its sample data has.
// Loaded on first use (ExpressionInput), in a chunk of its own.
import { useEffect, useRef } from "react";
import { Annotation, EditorState } from "@codemirror/state";
import { EditorView, keymap, placeholder as cmPlaceholder } from "@codemirror/view";
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { autocompletion, closeBrackets, closeBracketsKeymap, completionKeymap, type CompletionContext } from "@codemirror/autocomplete";
import { javascript } from "@codemirror/lang-javascript";
import { defaultHighlightStyle, syntaxHighlighting } from "@codemirror/language";
import { BUILTINS, complete, SCRIPT_GLOBALS, type Scope } from "./scope";
import { setExprTarget, exprTarget, type ExprTarget } from "./exprTarget";

// fromValue marks the transaction that puts a value set from outside into
// the editor: it is not handed back up as a change.
const fromValue = Annotation.define<boolean>();

export interface ExprEditorProps {
  value: string;
  onChange: (v: string) => void;
  scope: Scope | null;
  label: string;
  placeholder?: string;
  rows?: number;
  invalid?: boolean;
  describedBy?: string;
  // onReady hands over a way to focus the editor (null when it goes).
  onReady: (focus: (() => void) | null) => void;
  // language "javascript" edits a script (a Code step's source): its
  // syntax highlighted, the same completions of the step's data.
  language?: "javascript";
}

export default function ExprEditor({ value, onChange, scope, label, placeholder, rows = 3, invalid, describedBy, onReady, language }: ExprEditorProps) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const change = useRef(onChange);
  change.current = onChange;
  // The texts handed up not yet come back as value: React may render a
  // value a keystroke behind the editor, which must not undo the keystroke.
  const sent = useRef<string[]>([]);
  const scopeRef = useRef(scope);
  scopeRef.current = scope;

  useEffect(() => {
    const source = (ctx: CompletionContext) => {
      const sc = scopeRef.current;
      if (!sc) return null;
      const before = ctx.state.sliceDoc(0, ctx.pos);
      const r = complete(before, sc, language === "javascript" ? SCRIPT_GLOBALS : BUILTINS);
      if (!r) return null;
      // Offer fields at once after a dot; names once a letter is typed (or asked for).
      if (r.from === ctx.pos && !before.endsWith(".") && !ctx.explicit) return null;
      return { from: r.from, options: r.options, validFor: /^[A-Za-z0-9_]*$/ };
    };
    const target: ExprTarget = {
      insert: (text) => {
        const v = view.current;
        if (!v) return;
        v.dispatch(v.state.replaceSelection(text));
        v.focus();
      },
    };
    const v = new EditorView({
      parent: host.current!,
      state: EditorState.create({
        doc: value,
        extensions: [
          history(),
          ...(language === "javascript" ? [javascript(), syntaxHighlighting(defaultHighlightStyle)] : []),
          closeBrackets(),
          autocompletion({ override: [source], activateOnTyping: true, icons: false }),
          keymap.of([...closeBracketsKeymap, ...completionKeymap, ...defaultKeymap, ...historyKeymap]),
          EditorView.lineWrapping,
          cmPlaceholder(placeholder ?? ""),
          EditorView.contentAttributes.of({ "aria-label": label, spellcheck: "false", ...(describedBy ? { "aria-describedby": describedBy } : {}) }),
          EditorView.theme({ "&": { minHeight: `${rows * 1.45 + 0.6}em` } }),
          EditorView.updateListener.of((u) => {
            // The value prop put in is not a change of the editor's: handed
            // back, it would set the parent's state again from the effect
            // that applied it (another render, another effect), and mark
            // the flow edited by a rename.
            if (u.docChanged && !u.transactions.some((tr) => tr.annotation(fromValue))) {
              const text = u.state.doc.toString();
              sent.current.push(text);
              change.current(text);
            }
            if (u.focusChanged && u.view.hasFocus) setExprTarget(target);
          }),
        ],
      }),
    });
    view.current = v;
    onReady(() => v.focus());
    return () => {
      if (exprTarget() === target) setExprTarget(null);
      onReady(null);
      v.destroy();
      view.current = null;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  // A value set from outside (the plain field, a rename) replaces the text.
  useEffect(() => {
    const v = view.current;
    const i = sent.current.indexOf(value);
    if (i >= 0) {
      sent.current.splice(0, i + 1);
      return;
    }
    sent.current = [];
    if (v && v.state.doc.toString() !== value) v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: value }, annotations: fromValue.of(true) });
  }, [value]);

  useEffect(() => {
    view.current?.contentDOM.setAttribute("aria-invalid", invalid ? "true" : "false");
  }, [invalid]);

  return <div className="expr-cm mono" ref={host} />;
}
