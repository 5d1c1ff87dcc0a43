// The settings of an edge: when it is taken, whether it loops back, and
// its mapping.
import type { Edge } from "@xyflow/react";
import { useEffect, useState } from "react";
import type { Problem } from "../api";
import { DataPanel } from "../components/DataPanel";
import { ExpressionInput } from "../components/ExpressionInput";
import { ExprPreview } from "../components/ExprPreview";
import { PlainProblem } from "../components/PlainProblem";
import { useStepData } from "../components/sample";
import { scopeOf } from "../components/scope";
import type { CanvasNode } from "../graph";
import {
  checkLoopMax,
  edgeKind,
  forwardSucc,
  isLoop,
  loopMax,
  MAX_LOOP_ITERATIONS,
  outcomesOf,
  pathBetween,
  problemText,
  type EdgeKind,
} from "../graph";
import { checkExpression } from "./nodesettings/checkExpression";

interface EdgeProps {
  edge: Edge;
  source: CanvasNode | undefined;
  siblings: Edge[];
  // edges: all the graph's edges (to tell whether a loop edge goes back).
  edges: Edge[];
  // cycle: the cycle this edge is on that no loop edge closes, or null.
  cycle: string[] | null;
  problems: (Problem & { stale?: boolean })[];
  onChange: (id: string, data: Record<string, any>) => void;
  onDelete: (id: string) => void;
  onSelectNode: (id: string) => void;
  // For the data panel, completions and the condition's preview: the
  // flow, its nodes and the graph as it stands.
  flowId?: string | null;
  nodes?: CanvasNode[];
  graph?: () => unknown;
}

const BRANCH_KEYS = ["condition", "default", "on", "outcome"];

// EdgeSettings edits when an edge is taken (always, on a condition, as the
// "else", on failure, on an outcome) and its mapping: target key → gjson
// path into the upstream output.
export function EdgeSettings({ edge, source, siblings, edges, cycle, problems, onChange, onDelete, onSelectNode, flowId = null, nodes = [], graph = () => null }: EdgeProps) {
  const data: Record<string, any> = (edge.data as Record<string, any>) ?? {};
  const mapping: Record<string, string> = (data.mapping as Record<string, string>) ?? {};
  const [rows, setRows] = useState<[string, string][]>(() => Object.entries(mapping));
  const kind = edgeKind(data);
  const isUX = String(source?.type ?? "").toLowerCase() === "ux";
  const outcomes = outcomesOf(source?.data);
  const [draft, setDraft] = useState<string>(typeof data.condition === "string" ? data.condition : "");
  // A condition reads its source step's output and input.
  const stepData = useStepData(flowId, edge.source, source?.data?._pinned);
  const scope = scopeOf(edge.source, stepData, nodes, edges, true);
  const [check, setCheck] = useState<string | null>(() => (kind === "condition" ? checkExpression(draft) : null));
  // The expression is checked a moment after typing stops.
  useEffect(() => {
    if (kind !== "condition") return setCheck(null);
    const t = window.setTimeout(() => setCheck(checkExpression(draft)), 350);
    return () => window.clearTimeout(t);
  }, [draft, kind]);

  const setKind = (k: EdgeKind) => {
    const next: Record<string, any> = {};
    for (const [key, v] of Object.entries(data)) if (!BRANCH_KEYS.includes(key)) next[key] = v;
    if (k === "condition") next.condition = draft;
    if (k === "default") next.default = true;
    if (k === "failure") next.on = "failure";
    if (k === "compensate") next.on = "compensate";
    if (k === "outcome") {
      const taken = new Set(siblings.filter((e) => edgeKind(e.data) === "outcome").map((e) => (e.data as any).outcome));
      next.outcome = outcomes.find((o) => !taken.has(o)) ?? outcomes[0];
    }
    onChange(edge.id, next);
  };
  const commit = (next: [string, string][]) => {
    setRows(next);
    const m: Record<string, string> = {};
    for (const [k, v] of next) if (k.trim()) m[k.trim()] = v;
    const d = { ...data };
    if (Object.keys(m).length) d.mapping = m;
    else delete d.mapping;
    onChange(edge.id, d);
  };
  const conditionProblems = problems.filter((p) => /\.condition$/.test(p.path ?? ""));
  // Loop messages (invalid_loop, at edges[i].data.loop… or at the edge)
  // are shown with the loop's settings.
  const loopProblems = problems.filter((p) => p.code === "invalid_loop" || /\.data\.loop(\.|$)/.test(p.path ?? ""));
  const otherProblems = problems.filter((p) => !conditionProblems.includes(p) && !loopProblems.includes(p));
  const otherDefault = kind === "default" && siblings.some((e) => edgeKind(e.data) === "default");
  const hasConditions = siblings.some((e) => edgeKind(e.data) === "condition");
  const src = edge.source;
  const kinds: { k: EdgeKind; label: string; hint: string }[] = [
    { k: "always", label: "Always", hint: `Whenever ${src} completes.` },
    { k: "condition", label: "When a condition holds", hint: `When the expression is true after ${src} completes.` },
    { k: "default", label: "Else", hint: `When no other edge from ${src} with a condition or an outcome is taken.` },
    { k: "failure", label: "On failure", hint: `Only when ${src} fails for good (its retries used up). The failure is handled: the run goes on here.` },
    {
      k: "compensate",
      label: "Undo (compensation)",
      hint: `${edge.target} undoes ${src}: it runs only if the run fails (or is cancelled with “undo”) after ${src} completed, in reverse order of completion.`,
    },
  ];
  // An undo node's only edge is its compensation edge.
  const undoOthers =
    kind === "compensate" ? edges.filter((e) => e.id !== edge.id && (e.target === edge.target || e.source === edge.target)) : [];
  if (isUX || kind === "outcome") kinds.push({ k: "outcome", label: "On an outcome", hint: `When the person at ${src} chooses this outcome.` });
  // A Splitter's edges lead into its parallel region: always taken.
  const isSplitter = String(source?.type ?? "").toLowerCase() === "splitter";

  return (
    <form className="settings edge-settings" onSubmit={(e) => e.preventDefault()} aria-label={`Edge ${edge.id} settings`}>
      <h2>
        Edge <span className="mono">{edge.id}</span>
      </h2>
      <p className="muted small">
        <button type="button" className="linklike" onClick={() => onSelectNode(edge.source)}>
          {edge.source}
        </button>{" "}
        →{" "}
        <button type="button" className="linklike" onClick={() => onSelectNode(edge.target)}>
          {edge.target}
        </button>
      </p>
      {otherProblems.map((p, i) => (
        <p key={i} className={`field-error ${p.stale ? "stale" : ""}`} role="alert">
          ⚠ {p.stale ? "At the last save: " : ""}
          <PlainProblem message={problemText(p.message, edge.id)} path={p.path} />
        </p>
      ))}
      <fieldset className="edge-kinds">
        <legend>Taken</legend>
        {kinds.map(({ k, label, hint }) => (
          <label key={k} className={`choice ${kind === k ? "active" : ""}`}>
            <input type="radio" name="edge-kind" value={k} checked={kind === k} disabled={isSplitter && k !== "always" && kind !== k} onChange={() => setKind(k)} />
            <span>
              <strong>{label}</strong>
              <span className="hint">{hint}</span>
            </span>
          </label>
        ))}
        {isSplitter && <p className="hint">{src} is a Splitter: its edges lead into its parallel region and are always taken. Branch after the region's first step.</p>}
      </fieldset>
      {kind === "condition" && (
        <div className="field">
          <label htmlFor="edge-condition">Condition</label>
          <ExpressionInput
            id="edge-condition"
            label="Condition"
            rows={3}
            placeholder="output.score > 50"
            value={draft}
            scope={scope}
            invalid={!!check || conditionProblems.some((p) => !p.stale)}
            describedBy="edge-condition-help"
            onChange={(v) => {
              setDraft(v);
              onChange(edge.id, { ...data, condition: v });
            }}
          />
          <ExprPreview
            flowId={flowId}
            nodeId={edge.source}
            edgeId={edge.id}
            text={draft}
            sample={stepData.sample}
            graph={graph}
            manual={String(source?.type ?? "").toLowerCase() === "http" ? `sends ${edge.source}'s request` : undefined}
          />
          <p className="hint" id="edge-condition-help">
            An <a href="https://expr-lang.org/docs/language-definition" target="_blank" rel="noreferrer">expr</a> expression that is true or false.
            Names: <code>output</code> ({src}'s output), <code>input</code> ({src}'s input), <code>run.id</code>, <code>run.input</code>,{" "}
            <code>entity</code> (or nil), <code>steps.&lt;id&gt;.output</code>, <code>vars.&lt;name&gt;</code>. E.g. <code>output.score &gt; 50 &amp;&amp; entity != nil</code>. Names and types are checked when you save.
          </p>
          {check && (
            <p className="field-error" role="alert" data-check="local">
              {check}
            </p>
          )}
          {conditionProblems.map((p, i) => (
            <p key={i} className={`field-error ${p.stale ? "stale" : ""}`} role="alert" data-check="server">
              ⚠ {p.stale ? "At the last save: " : ""}
              <PlainProblem message={problemText(p.message, edge.id)} path={p.path} src={p.stale ? undefined : draft} />
            </p>
          ))}
        </div>
      )}
      {kind === "condition" && <DataPanel scope={scope} output={stepData.output} from={stepData.from} tested={stepData.tested} condition />}
      {kind === "default" && otherDefault && (
        <p className="field-error" role="alert">
          Another edge from {src} is already its “else”: keep one.
        </p>
      )}
      {kind === "default" && !hasConditions && <p className="hint">No other edge from {src} has a condition yet: this edge is always taken.</p>}
      {kind === "outcome" && (
        <div className="field">
          <label htmlFor="edge-outcome">Outcome</label>
          <select id="edge-outcome" value={String(data.outcome ?? "")} onChange={(e) => onChange(edge.id, { ...data, outcome: e.target.value })}>
            {(outcomes.includes(String(data.outcome)) ? outcomes : [String(data.outcome), ...outcomes]).map((o) => (
              <option key={o} value={o}>
                {o}
                {outcomes.includes(o) ? "" : " (not offered)"}
              </option>
            ))}
          </select>
          {!isUX && <p className="field-error">Outcomes belong to UX steps: {src} is a {String(source?.type ?? "missing node")}.</p>}
          {isUX && (
            <p className="hint">
              {src} offers {outcomes.map((o) => `“${o}”`).join(", ")}; edit them in its settings.
            </p>
          )}
        </div>
      )}
      {kind === "compensate" && (
        <>
          <p className="hint" data-compensate-hint>
            {edge.target}'s input is <code>{`{"output", "input", "error"}`}</code>: {src}'s output and input, and why the run failed (or{" "}
            <code>cancelled</code>). The run ends after its undo steps ran: failed, compensated.
          </p>
          {undoOthers.length > 0 && (
            <p className="field-error" role="alert" data-check="local">
              {edge.target} has other edges ({undoOthers.map((e) => e.id).join(", ")}): an undo step has no edge but this one.
            </p>
          )}
        </>
      )}
      {kind === "failure" && (
        <p className="hint">
          The next step's input is <code>{`{"error", "node", "input"}`}</code>: the reason, the failed node's key and its input. {src}'s other edges are not
          taken when it fails.
        </p>
      )}
      {kind !== "compensate" && (
        <LoopFields edge={edge} edges={edges} kind={kind} isUX={isUX} cycle={cycle} problems={loopProblems} onChange={(d) => onChange(edge.id, d)} />
      )}
      {kind !== "compensate" && (
      <fieldset>
        <legend>Mapping</legend>
        <p className="muted small">
          Without a mapping, the upstream output is merged into the input as is. With one, each key gets the value at a gjson path into the upstream
          output (<code>@this</code> is the whole output).
        </p>
        {rows.map(([k, v], i) => (
          <div className="row" key={i}>
            <label className="sr-only" htmlFor={`map-k-${i}`}>
              Key {i + 1}
            </label>
            <input id={`map-k-${i}`} placeholder="input key" value={k} onChange={(e) => commit(rows.map((r, j) => (j === i ? [e.target.value, r[1]] : r)))} />
            <span aria-hidden="true">←</span>
            <label className="sr-only" htmlFor={`map-v-${i}`}>
              Path {i + 1}
            </label>
            <input id={`map-v-${i}`} className="mono" placeholder="path, e.g. @this" value={v} onChange={(e) => commit(rows.map((r, j) => (j === i ? [r[0], e.target.value] : r)))} />
            <button type="button" className="btn ghost small" aria-label={`Remove mapping ${k || i + 1}`} onClick={() => commit(rows.filter((_, j) => j !== i))}>
              ×
            </button>
          </div>
        ))}
        <button type="button" className="btn small" onClick={() => setRows([...rows, ["", ""]])}>
          Add mapping
        </button>
      </fieldset>
      )}
      <button type="button" className="btn danger" onClick={() => onDelete(edge.id)}>
        Delete edge
      </button>
    </form>
  );
}

// LoopFields marks an edge as a loop's back edge: taking it goes round
// again, from its target to its source, at most maxIterations times. A
// loop edge needs a condition or an outcome to decide when to go round.
function LoopFields({
  edge,
  edges,
  kind,
  isUX,
  cycle,
  problems,
  onChange,
}: {
  edge: Edge;
  edges: Edge[];
  kind: EdgeKind;
  isUX: boolean;
  cycle: string[] | null;
  problems: (Problem & { stale?: boolean })[];
  onChange: (data: Record<string, any>) => void;
}) {
  const data: Record<string, any> = (edge.data as Record<string, any>) ?? {};
  const on = isLoop(data);
  const max = loopMax(data);
  const [draft, setDraft] = useState(typeof max === "number" ? String(max) : "");
  const src = edge.source;
  const head = edge.target;
  const decided = kind === "condition" || kind === "outcome";
  // A loop edge goes back: its target leads (forward) to its source.
  const back = on ? pathBetween(forwardSucc(edges.filter((e) => e.id !== edge.id)), head, src) : null;
  const maxCheck = on ? checkLoopMax(max) : null;
  const toggle = (v: boolean) => {
    const next = { ...data };
    if (v) next.loop = { maxIterations: typeof max === "number" ? max : Number(draft) || 3 };
    else delete next.loop;
    if (v && !draft) setDraft("3");
    onChange(next);
  };
  return (
    <fieldset className={`loop-fields ${on ? "active" : ""}`} aria-label="Loop">
      <legend>Loop</legend>
      <label className="choice check">
        <input id="edge-loop" type="checkbox" checked={on} onChange={(e) => toggle(e.target.checked)} />
        <span>
          <strong>↺ Loop back (go round again)</strong>
          <span className="hint">
            Taking this edge starts a new iteration of the steps from {head} to {src}: {head} runs again with {src}'s output.
          </span>
        </span>
      </label>
      {cycle && !on && (
        <p className="field-error" role="alert" data-check="local" data-cycle-warning>
          This edge is on a cycle ({cycle.join(" → ")}). A flow may only go round through a loop edge: mark the edge that goes back as “Loop back”
          with a condition or an outcome, or remove it.
        </p>
      )}
      {on && (
        <>
          <div className="field">
            <label htmlFor="edge-loop-max">Max iterations</label>
            <input
              id="edge-loop-max"
              type="number"
              min={1}
              max={MAX_LOOP_ITERATIONS}
              step={1}
              value={draft}
              aria-invalid={!!maxCheck || problems.some((p) => !p.stale)}
              onChange={(e) => {
                setDraft(e.target.value);
                const v = e.target.value.trim() === "" ? undefined : Number(e.target.value);
                // Kept as typed, even out of range: the server says why when saving.
                onChange({ ...data, loop: { ...(typeof data.loop === "object" && data.loop ? data.loop : {}), maxIterations: v } });
              }}
            />
            <p className="hint">
              The first pass counts. Going round once more after the last fails {src} with the reason (a failure edge from {src} can take it on).
            </p>
            {maxCheck && (
              <p className="field-error" role="alert" data-check="local">
                {maxCheck}
              </p>
            )}
          </div>
          {!decided ? (
            <p className="field-error" role="alert" data-check="local" data-loop-needs>
              A loop edge needs a condition or an outcome, else it would go round every time: choose “When a condition holds”
              {isUX ? " or “On an outcome”" : ""} above.
            </p>
          ) : (
            <p className="hint" data-loop-when>
              Goes round {kind === "outcome" ? `when “${String(data.outcome)}” is chosen at ${src}` : "while the condition holds"}; otherwise {src}'s other
              edges leave the loop. Only {src} may have edges out of the loop.
            </p>
          )}
          {!back && (
            <p className="field-error" role="alert" data-check="local">
              {head} does not lead to {src}: a loop edge must go back to a step before its source.
            </p>
          )}
        </>
      )}
      {problems.map((p, i) => (
        <p key={i} className={`field-error ${p.stale ? "stale" : ""}`} role="alert" data-check="server">
          ⚠ {p.stale ? "At the last save: " : ""}
          <PlainProblem message={problemText(p.message, edge.id)} path={p.path} />
        </p>
      ))}
    </fieldset>
  );
}
