// renameStepRefs rewrites what names a renamed step in a node's or an
// edge's data: every steps.<from> and steps["<from>"] in its strings
// (expressions, {{ }} templates, Code scripts) comes to name <to>, so a
// rename does not leave the flow's references to the step broken.

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

// KEYWORDS are expr-lang's words: a step named so is written steps["in"].
const KEYWORDS = new Set(["in", "not", "and", "or", "matches", "contains", "startsWith", "endsWith", "let", "nil", "true", "false", "if", "else"]);

// named says whether steps.<id> can name id.
const named = (id: string) => IDENT.test(id) && !KEYWORDS.has(id);

// renameInString is one string rewritten and how many references it
// changed. In a template (a string with {{ }}) only what is inside the
// braces is read: "Check steps.fetch" around them is a message's words.
export function renameInString(s: string, from: string, to: string): { text: string; count: number } {
  if (!s.includes(from)) return { text: s, count: 0 };
  if (s.includes("{{")) {
    let count = 0;
    const text = s.replace(/\{\{[\s\S]*?\}\}/g, (seg) => {
      const r = renameRefs(seg, from, to);
      count += r.count;
      return r.text;
    });
    return { text, count };
  }
  return renameRefs(s, from, to);
}

function renameRefs(s: string, from: string, to: string): { text: string; count: number } {
  let count = 0;
  const f = escapeRe(from);
  // Not a member of something else (x.steps.a) nor part of a longer name.
  const head = "(?<![\\w$.])steps";
  // steps["a"], steps['a'] and steps[`a`], kept in their quotes.
  let text = s.replace(new RegExp(`${head}(\\s*(?:\\?\\.)?\\s*\\[\\s*)(["'\`])${f}\\2(\\s*\\])`, "g"), (_m, open, q, close) => {
    count++;
    return `steps${open}${q}${to}${q}${close}`;
  });
  // steps.a, only when a can be written so: steps.fetch-2 is steps.fetch
  // minus 2, whatever the steps are called.
  if (IDENT.test(from)) {
    text = text.replace(new RegExp(`${head}(\\s*(\\?)?\\.\\s*)${f}(?![\\w$])`, "g"), (_m, dot, optional) => {
      count++;
      if (named(to)) return `steps${dot}${to}`;
      return optional ? `steps?.["${to}"]` : `steps["${to}"]`;
    });
  }
  return { text, count };
}

// renameStepRefs returns value with every string in it rewritten (value
// itself is not changed) and the count of references changed. A node's
// pinned sample (_pinned) is data, not what it reads: its strings are left
// alone, but the step's own entry in it (steps.<from>) moves to <to>.
export function renameStepRefs<T>(value: T, from: string, to: string): { value: T; count: number } {
  let count = 0;
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") {
      const r = renameInString(v, from, to);
      count += r.count;
      return r.text;
    }
    if (Array.isArray(v)) {
      let changed = false;
      const out = v.map((x) => {
        const y = walk(x);
        if (y !== x) changed = true;
        return y;
      });
      return changed ? out : v;
    }
    if (v && typeof v === "object") {
      let changed = false;
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
        const y = k === "_pinned" ? movePinned(x, from, to) : walk(x);
        if (y !== x) changed = true;
        out[k] = y;
      }
      return changed ? out : v;
    }
    return v;
  };
  const out = walk(value) as T;
  return { value: out, count };
}

// movePinned moves a pinned sample's steps.<from> to steps.<to>.
function movePinned(pinned: unknown, from: string, to: string): unknown {
  const steps = (pinned as { steps?: Record<string, unknown> } | null)?.steps;
  if (!steps || typeof steps !== "object" || !(from in steps) || to in steps) return pinned;
  const { [from]: moved, ...rest } = steps;
  return { ...(pinned as object), steps: { ...rest, [to]: moved } };
}
