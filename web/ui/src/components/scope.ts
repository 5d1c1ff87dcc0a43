// What an expression at a step can name, for the data panel and the
// expression editor's completions (docs/authoring.md, Expressions).
import type { Edge } from "@xyflow/react";
import { isLoop } from "../graph";
import type { StepData } from "./sample";

// upstream lists the steps that run before id: those it is reached from
// by forward edges (a loop's back edge goes round, not before).
export function upstream(id: string, edges: Edge[]): string[] {
  const preds = new Map<string, string[]>();
  for (const e of edges) if (!isLoop(e.data as Record<string, any>)) preds.set(e.target, [...(preds.get(e.target) ?? []), e.source]);
  const seen = new Set<string>();
  const out: string[] = [];
  const walk = (n: string) => {
    for (const p of preds.get(n) ?? []) {
      if (seen.has(p) || p === id) continue;
      seen.add(p);
      walk(p);
      out.push(p);
    }
  };
  walk(id);
  return out;
}

// variableNames lists the run variables steps set (data.setVariables).
export function variableNames(nodes: { data?: Record<string, any> }[]): string[] {
  const names = new Set<string>();
  for (const n of nodes) {
    const sv = n.data?.setVariables;
    if (sv && typeof sv === "object" && !Array.isArray(sv)) for (const k of Object.keys(sv)) names.add(k);
  }
  return [...names].sort();
}

// Scope is the names an expression may use with their sample values.
export interface Scope {
  input: any;
  // output: the step's output, for conditions (undefined where not a name).
  output?: any;
  run: { id: string; input: any };
  entity: any;
  steps: Record<string, { output: any; input: any }>;
  vars: Record<string, any>;
  item?: { index: number; key: string };
}

// scopeOf is what an expression of step id (or, with condition, of an
// edge leaving it) reaches, its values from data.
export function scopeOf(id: string, data: StepData, nodes: { id: string; data?: Record<string, any> }[], edges: Edge[], condition: boolean): Scope {
  const steps: Scope["steps"] = {};
  const ids = condition ? [...upstream(id, edges), id] : upstream(id, edges);
  for (const s of ids) {
    const v = data.sample.steps[s];
    steps[s] = { output: s === id ? data.output : (v?.output ?? null), input: v?.input ?? null };
  }
  const vars: Record<string, any> = {};
  for (const n of variableNames(nodes)) vars[n] = data.sample.vars?.[n] ?? null;
  const sc: Scope = {
    input: data.sample.input ?? {},
    run: { id: "", input: data.sample.run?.input ?? {} },
    entity: { id: "", name: "", email: "", type: "", metadata: {}, section_id: "" },
    steps,
    vars,
  };
  if (condition) sc.output = data.output ?? null;
  return sc;
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

// pathOf writes a path as an expression reads it: a.b, a["x-y"], a[0].
export function pathOf(parts: (string | number)[]): string {
  let s = "";
  for (const p of parts) {
    if (typeof p === "number") s += `[${p}]`;
    else if (s === "") s = p;
    else s += IDENT.test(p) ? `.${p}` : `[${JSON.stringify(p)}]`;
  }
  return s;
}

// expr-lang's builtins most flows use.
export const BUILTINS = [
  "len", "upper", "lower", "trim", "split", "join", "replace", "repeat", "hasPrefix", "hasSuffix", "indexOf",
  "filter", "map", "all", "any", "none", "one", "count", "find", "findIndex", "groupBy", "sortBy", "sum", "mean",
  "min", "max", "abs", "ceil", "floor", "round", "int", "float", "string", "toJSON", "fromJSON", "keys", "values",
  "first", "last", "get", "now", "date", "duration", "type", "uniq", "concat", "flatten", "reverse", "sort",
];

export interface Completion {
  label: string;
  type: "variable" | "function" | "property";
  detail?: string;
}

function kind(v: any): string {
  if (v === null || v === undefined) return "";
  if (Array.isArray(v)) return `list of ${v.length}`;
  if (typeof v === "object") return "object";
  const s = JSON.stringify(v);
  return s.length > 24 ? s.slice(0, 23) + "…" : s;
}

// What a Code step's script has besides its data's names: JavaScript's
// own, not expr-lang's builtins (abs, all, any are no functions there).
export const SCRIPT_GLOBALS = ["console", "JSON", "Math", "Object", "Array", "Number", "String", "Boolean", "Date", "parseInt", "parseFloat"];

// complete answers what may follow text (the expression up to the
// cursor): the names and builtins (expr-lang's, or those given), or the
// fields of what the path before the last dot reaches. from is where the
// word being typed starts.
export function complete(text: string, scope: Scope, builtins: string[] = BUILTINS): { from: number; options: Completion[] } | null {
  const m = /((?:[A-Za-z_][A-Za-z0-9_]*|\[[^\]]*\])(?:\.[A-Za-z_][A-Za-z0-9_]*|\[[^\]]*\])*\.)?([A-Za-z_][A-Za-z0-9_]*)?$/.exec(text);
  if (!m || (!m[1] && !m[2])) return null;
  const word = m[2] ?? "";
  const from = text.length - word.length;
  if (!m[1]) {
    // Not after a dot; a name or builtin, unless it follows a quote or digit.
    if (/["'`0-9]$/.test(text.slice(0, from))) return null;
    const names: Completion[] = Object.keys(scope).filter((k) => (scope as any)[k] !== undefined).map((k) => ({ label: k, type: "variable" }));
    if (!names.some((n) => n.label === "item")) names.push({ label: "item", type: "variable", detail: "in a fan-out" });
    return { from, options: [...names, ...builtins.map((b): Completion => ({ label: b, type: "function" }))] };
  }
  // Walk the path before the dot.
  const path = m[1].slice(0, -1);
  const parts = path.match(/[A-Za-z_][A-Za-z0-9_]*|\[[^\]]*\]/g) ?? [];
  let v: any = scope;
  for (const p of parts) {
    let k: string | number = p;
    if (p.startsWith("[")) {
      const inner = p.slice(1, -1).trim();
      try {
        k = JSON.parse(inner.replace(/^'(.*)'$/, '"$1"'));
      } catch {
        return null;
      }
    }
    if (v === null || typeof v !== "object") return null;
    v = v[k as any];
    if (v === undefined) return null;
  }
  if (v === null || typeof v !== "object" || Array.isArray(v)) return null;
  return { from, options: Object.keys(v).map((k) => ({ label: k, type: "property", detail: kind(v[k]) })) };
}
