// @vitest-environment jsdom
// The expression editor held by a parent's state, as every expression
// field is: a change typed is handed up once, a value set from outside is
// put in and not handed back (handed back, it set the parent's state again
// from the effect that applied it, without end under a parent that writes
// what it is handed its own way), and keystrokes typed before React
// renders are all kept.
import { act, useState } from "react";
import { createRoot, type Root } from "react-dom/client";
import { EditorView } from "@codemirror/view";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import ExprEditor from "./ExprEditor";

beforeAll(() => {
  (globalThis as any).IS_REACT_ACT_ENVIRONMENT = true;
  // jsdom lays nothing out: CodeMirror's measuring asks a Range for
  // rectangles it does not have.
  const none = () => ({ x: 0, y: 0, top: 0, left: 0, bottom: 0, right: 0, width: 0, height: 0, toJSON: () => ({}) }) as DOMRect;
  Range.prototype.getClientRects = () => ({ length: 0, item: () => null, [Symbol.iterator]: [][Symbol.iterator] }) as unknown as DOMRectList;
  Range.prototype.getBoundingClientRect = none;
});

let host: HTMLDivElement;
let root: Root;
beforeEach(() => {
  host = document.createElement("div");
  document.body.appendChild(host);
  root = createRoot(host);
});
afterEach(() => {
  act(() => root.unmount());
  host.remove();
});

// A parent holding the field's value in its state; write is what it
// makes of a text handed up (the text itself by default).
interface Probe {
  renders: number;
  handed: string[];
  value: string;
  set: (v: string) => void;
}

function mount(initial: string, write: (t: string) => string = (t) => t): Probe {
  const probe: Probe = { renders: 0, handed: [], value: initial, set: () => {} };
  function Parent() {
    const [value, setValue] = useState(initial);
    probe.renders++;
    probe.value = value;
    probe.set = setValue;
    return (
      <ExprEditor
        value={value}
        onChange={(t) => {
          probe.handed.push(t);
          setValue(write(t));
        }}
        scope={null}
        label="Expression"
        onReady={() => {}}
      />
    );
  }
  act(() => root.render(<Parent />));
  return probe;
}

function view(): EditorView {
  const v = EditorView.findFromDOM(host.querySelector(".cm-editor") as HTMLElement);
  if (!v) throw new Error("no editor");
  return v;
}

// type puts text at the end as a keystroke does.
function type(text: string) {
  const v = view();
  v.dispatch({ changes: { from: v.state.doc.length, insert: text }, userEvent: "input.type" });
}

describe("ExprEditor under a parent's state", () => {
  it("hands each typed change up once, and the parent's value follows", () => {
    const p = mount("a");
    const before = p.renders;
    for (const ch of "bcd") act(() => type(ch));
    expect(p.handed).toEqual(["ab", "abc", "abcd"]);
    expect(p.value).toBe("abcd");
    expect(view().state.doc.toString()).toBe("abcd");
    // One render of the parent a keystroke: nothing sets its state again.
    expect(p.renders - before).toBe(3);
  });

  it("puts a value set from outside in, and does not hand it back", () => {
    const p = mount("steps.a.output");
    const before = p.renders;
    act(() => p.set("steps.b.output"));
    expect(view().state.doc.toString()).toBe("steps.b.output");
    expect(p.handed).toEqual([]);
    expect(p.renders - before).toBe(1);
  });

  it("settles under a parent that writes what it is handed its own way", () => {
    // Each text the parent is handed comes out another (a counter
    // appended): one handed back would come back again, and again (here
    // until the counter stops at 60, past React's limit of 50).
    let n = 0;
    const p = mount("x", (t) => (n < 60 ? `${t.replace(/#\d+$/, "")}#${++n}` : t));
    act(() => type("y"));
    expect(p.handed).toEqual(["xy"]);
    expect(p.value).toBe("xy#1");
    expect(view().state.doc.toString()).toBe("xy#1");
    act(() => p.set("z"));
    expect(p.handed).toEqual(["xy"]);
    expect(view().state.doc.toString()).toBe("z");
    expect(p.renders).toBeLessThan(10);
  });

  it("keeps two keystrokes typed before React renders, handed up in order", () => {
    const p = mount("a");
    act(() => {
      type("b");
      type("c");
    });
    expect(view().state.doc.toString()).toBe("abc");
    expect(p.value).toBe("abc");
    expect(p.handed).toEqual(["ab", "abc"]);
  });
});
