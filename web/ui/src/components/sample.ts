// The data a step sees, shared by the Test tab, the data panel, the
// expression editor's completions and its preview: the sample being
// edited in the Test tab, else the node's pinned sample (saved with the
// flow's layout as the node's "pinned", outside its data, so the compiler
// never sees it and real runs never use it), else the flow's last run; a
// step's output is its last test's, else the pin's, else the run's.
import { useEffect, useState } from "react";
import { api, type Run, type NodeTestAnswer } from "../api";

// Sample is what a step tried alone sees (POST …/nodes/{key}/test).
export interface Sample {
  input: any;
  steps: Record<string, { input?: any; output?: any }>;
  run: { input: any };
  vars: Record<string, any>;
}

export type TestAnswer = NodeTestAnswer;

// fromRun is the sample a run gives node nodeId: its input there, every
// step's input and output, the run's input and variables.
export function fromRun(r: Run, nodeId: string): Sample {
  const steps: Sample["steps"] = {};
  let input: any = {};
  for (const n of Object.values(r.nodes ?? {})) {
    if (n.index?.length) continue; // a fan-out's instances: the step's own row is enough to start from
    steps[n.node_id] = { input: n.input, output: n.output };
    if (n.node_id === nodeId && n.input !== null && n.input !== undefined) input = n.input;
  }
  return { input, steps, run: { input: r.input ?? {} }, vars: r.variables ?? {} };
}

// Per flow: its last run (null: none, or not readable). Per flow/step:
// the Test tab's draft (text) and its last answer. Kept while the page lives.
const lastRuns = new Map<string, Run | null>();
const loadingRuns = new Map<string, Promise<void>>();
export const drafts = new Map<string, string>();
const answers = new Map<string, TestAnswer>();
const listeners = new Set<() => void>();
const notify = () => listeners.forEach((f) => f());

export function loadLastRun(flowId: string, again = false): Promise<Run | null> {
  if (again) loadingRuns.delete(flowId);
  let p = loadingRuns.get(flowId);
  if (!p) {
    p = (async () => {
      try {
        const list = await api<{ runs: Run[] }>("GET", `/runs?flow_id=${flowId}&limit=1`, undefined, undefined, { quiet: true });
        lastRuns.set(flowId, list.runs[0] ? await api<Run>("GET", `/runs/${list.runs[0].id}`, undefined, undefined, { quiet: true }) : null);
      } catch {
        lastRuns.set(flowId, null);
      }
      notify();
    })();
    loadingRuns.set(flowId, p);
  }
  return p.then(() => lastRuns.get(flowId) ?? null);
}

export function setDraft(flowId: string, nodeId: string, text: string) {
  drafts.set(`${flowId}/${nodeId}`, text);
  notify();
}

export function setAnswer(flowId: string, nodeId: string, a: TestAnswer) {
  answers.set(`${flowId}/${nodeId}`, a);
  notify();
}

// parseSample reads a Test tab draft; null when it is not a JSON object.
export function parseSample(text: string | undefined): Sample | null {
  if (!text?.trim()) return null;
  try {
    const v = JSON.parse(text);
    if (!v || typeof v !== "object" || Array.isArray(v)) return null;
    return { input: v.input ?? {}, steps: v.steps ?? {}, run: { input: v.run?.input ?? {} }, vars: v.vars ?? {} };
  } catch {
    return null;
  }
}

// asSample reads a pinned sample (a node's "pinned"); null when absent.
export function asSample(v: unknown): Sample | null {
  if (!v || typeof v !== "object" || Array.isArray(v)) return null;
  return parseSample(JSON.stringify(v));
}

// pinText is the Test tab's text for a pinned sample.
export function pinText(p: Sample): string {
  return JSON.stringify(p, null, 2);
}

export type SampleSource = "draft" | "pinned" | "run" | "none";

export interface StepData {
  sample: Sample;
  // output: the step's own output (its last test's, else the run's).
  output: any;
  from: SampleSource;
  tested: boolean;
}

// stepData is what nodeId sees now; pinned is the node's pinned sample.
// A draft that is the pin unchanged counts as the pin.
export function stepData(flowId: string | null, nodeId: string, pinned: unknown = null): StepData {
  const pin = asSample(pinned);
  const text = flowId ? drafts.get(`${flowId}/${nodeId}`) : undefined;
  const draft = text !== undefined && !(pin && text === pinText(pin)) ? parseSample(text) : null;
  const run = flowId ? lastRuns.get(flowId) : null;
  const sample = draft ?? pin ?? (run ? fromRun(run, nodeId) : { input: {}, steps: {}, run: { input: {} }, vars: {} });
  const answer = flowId ? answers.get(`${flowId}/${nodeId}`) : undefined;
  const own = run ? fromRun(run, nodeId).steps[nodeId]?.output : undefined;
  return {
    sample,
    output: answer && !answer.error ? answer.output : (sample.steps[nodeId]?.output ?? own),
    from: draft ? "draft" : pin ? "pinned" : run ? "run" : "none",
    tested: !!answer && !answer.error,
  };
}

// useStepData is stepData kept current: the last run is asked for once.
export function useStepData(flowId: string | null, nodeId: string, pinned: unknown = null): StepData {
  const [, bump] = useState(0);
  useEffect(() => {
    const f = () => bump((n) => n + 1);
    listeners.add(f);
    if (flowId) loadLastRun(flowId);
    return () => {
      listeners.delete(f);
    };
  }, [flowId]);
  return stepData(flowId, nodeId, pinned);
}
