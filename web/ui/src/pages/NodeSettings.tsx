import type { Edge } from "@xyflow/react";
import { useEffect, useRef, useState, type CSSProperties } from "react";
import type { Problem } from "../api";
import { span } from "../components/common";
import { TaskForm } from "../components/LazyTaskForm";
import { JsonTab } from "../components/JsonTab";
import { TestTab } from "../components/TestTab";
import { PanelTabs, type PanelTab } from "../components/PanelTabs";
import { DataPanel } from "../components/DataPanel";
import { SummaryEditor } from "../components/SummaryEditor";
import { ExpressionInput } from "../components/ExpressionInput";
import { ExprPreview } from "../components/ExprPreview";
import { PlainProblem } from "../components/PlainProblem";
import { asSample, drafts, pinText, setDraft, useStepData, type Sample } from "../components/sample";
import { scopeOf, type Scope } from "../components/scope";
import type { CanvasNode } from "../graph";
import { movesEntity, typeInfo } from "../nodetypes";
import { EVENT_FIELDS, EventFields, HTTP_FIELDS, HTTPFields, RESPOND_FIELDS, RespondFields } from "./IntegrationSettings";
import { SUBFLOW_FIELDS, SubFlowFields } from "./SubFlowSettings";
import {
  checkLoopMax,
  DEFAULT_OUTCOMES,
  edgeKind,
  edgeLabel,
  forwardSucc,
  isCompensation,
  isLoop,
  loopMax,
  MAX_LOOP_ITERATIONS,
  outcomesOf,
  parseDuration,
  parseTime,
  pathBetween,
  problemText,
  type EdgeKind,
} from "../graph";

// setIn returns a copy of obj with path set to v; empty values and empty
// objects are dropped so the saved graph stays minimal.
function setIn(obj: Record<string, any>, path: string[], v: any): Record<string, any> {
  const out = { ...obj };
  if (path.length === 1) {
    if (v === "" || v === undefined || v === null || (typeof v === "number" && isNaN(v))) delete out[path[0]];
    else out[path[0]] = v;
    return out;
  }
  const child = setIn(typeof out[path[0]] === "object" && out[path[0]] ? out[path[0]] : {}, path.slice(1), v);
  if (Object.keys(child).length === 0) delete out[path[0]];
  else out[path[0]] = child;
  return out;
}

// The node types that may move the run's entity when they complete or
// fail (a Splitter or Collector may not).

const num = (s: string) => (s.trim() === "" ? undefined : Number(s));

interface NodeProps {
  node: CanvasNode;
  nodes: CanvasNode[];
  edges: Edge[];
  sections: { id: string; name: string }[] | null;
  problems: (Problem & { stale?: boolean })[];
  // flowId: the flow being edited (null for a new one).
  flowId?: string | null;
  // graph: the editor's graph as it stands (unsaved edits included), for
  // trying the step.
  graph?: () => unknown;
  onChange: (id: string, data: Record<string, any>) => void;
  onRename: (from: string, to: string) => void;
  onDelete: (id: string) => void;
  onConnect: (target: string) => void;
  onSelectEdge: (id: string) => void;
  onRenameOutcome: (node: string, from: string, to: string) => void;
}

export function NodeSettings({ node, nodes, edges, sections, problems, flowId = null, graph = () => null, onChange, onRename, onDelete, onConnect, onSelectEdge, onRenameOutcome }: NodeProps) {
  const d = node.data;
  const type = String(node.type);
  const info = typeInfo(type);
  const moves = movesEntity(info);
  // A type without a panel of its own (one added to stitchd) is set up by
  // the form its config schema describes; label and description have
  // their fields here.
  const own = ["label", "description", "entityMovement", "join"];
  // A script (a string whose contentMediaType is JavaScript: a Code
  // step's source) gets the code editor, with the step's data to complete
  // and to insert from the data panel; the schema's form shows the rest.
  const codeProps: [string, any][] =
    info && !info.panel ? Object.entries<any>(info.configSchema?.properties ?? {}).filter(([, p]) => p?.type === "string" && p.contentMediaType === "text/javascript") : [];
  const kept = [...own, ...codeProps.map(([k]) => k)];
  const schemaForm = info && !info.panel ? withoutKeys(info.configSchema, kept) : null;
  const set = (path: string[]) => (v: any) => onChange(node.id, setIn(d, path, v));
  const [idDraft, setIdDraft] = useState(node.id);
  const [idError, setIdError] = useState<string | null>(null);
  const [target, setTarget] = useState("");
  const [tab, setTab] = useState<PanelTab>("settings");
  const stepData = useStepData(flowId, node.id, d._pinned);
  const scope = scopeOf(node.id, stepData, nodes, edges, false);
  // A pinned sample is kept in the node's data as _pinned: saved beside
  // the step's config (a node's "pinned"), never part of it.
  const pin = (s: Sample | null) => {
    // The Test tab shows the pin as pinned, not as a draft that differs.
    if (s && flowId) setDraft(flowId, node.id, pinText(s));
    // Unpinned, the step sees the last run again, not the pin as a draft.
    const was = asSample(d._pinned);
    if (!s && flowId && was && drafts.get(`${flowId}/${node.id}`) === pinText(was)) setDraft(flowId, node.id, "");
    onChange(node.id, s ? { ...d, _pinned: s } : withoutKeys(d, ["_pinned"]));
  };
  const targets = nodes.filter((n) => n.id !== node.id && !edges.some((e) => e.source === node.id && e.target === n.id));
  const outgoing = edges.filter((e) => e.source === node.id);
  // The forward edges in: a node with several may fire on the first
  // (data.join "any").
  const incoming = edges.filter((e) => e.target === node.id && !isLoop(e.data as any) && !isCompensation(e.data as any));
  // A server message about one field is shown under that field; the rest
  // at the top.
  const at = (field: string) => problems.filter((p) => new RegExp(`\\.data\\.${field}(\\.|\\[|$)`).test(p.path ?? ""));
  const fields: string[] =
    type === "Transform"
      ? ["expression"]
      : type === "Wait"
        ? ["duration", "until", "timezone"]
        : type === "UX"
          ? ["timeoutSeconds", "onTimeout", ...UX_PEOPLE_FIELDS]
          : type === "HTTP"
            ? HTTP_FIELDS
            : type === "Event"
              ? EVENT_FIELDS
              : type === "SubFlow"
                ? SUBFLOW_FIELDS
                : type === "Respond"
                  ? RESPOND_FIELDS
                  : [];
  const claimed = new Set([...fields, "join"].flatMap(at));
  const commitId = () => {
    const v = idDraft.trim();
    if (v === node.id) return setIdError(null);
    if (!/^[A-Za-z][A-Za-z0-9_-]*$/.test(v)) return setIdError("Use letters, digits, _ and -, starting with a letter.");
    if (nodes.some((n) => n.id === v)) return setIdError(`Another node is already called ${v}.`);
    setIdError(null);
    onRename(node.id, v);
  };

  return (
    <form className="settings" onSubmit={(e) => e.preventDefault()} aria-label={`${type} ${node.id} settings`}>
      <h2>
        <span className={`type-chip snode-${type.toLowerCase()}`} style={info?.color ? ({ "--c": info.color } as CSSProperties) : undefined}>
          {type}
        </span> {node.id}
      </h2>
      <p className="muted small">{info?.help}</p>
      <PanelTabs tab={tab} onTab={setTab} />
      {problems
        .filter((p) => !claimed.has(p))
        .map((p, i) => (
          <p key={i} className={`field-error ${p.stale ? "stale" : ""}`} role="alert">
            ⚠ {p.stale ? "At the last save: " : ""}
            <PlainProblem message={p.message} path={p.path} />
          </p>
        ))}
      {tab === "test" ? (
        <TestTab flowId={flowId} nodeId={node.id} graph={graph} pinned={d._pinned} onPin={pin} />
      ) : tab === "json" ? (
        <JsonTab nodeId={node.id} data={d} onApply={(nd) => onChange(node.id, nd)} />
      ) : (
      <>
      <Field label="Node id" id="node-id" error={idError}>
        <input id="node-id" value={idDraft} onChange={(e) => setIdDraft(e.target.value)} onBlur={commitId} onKeyDown={(e) => e.key === "Enter" && commitId()} />
      </Field>
      <Field label="Label" id="node-label">
        <input id="node-label" value={d.label ?? ""} onChange={(e) => set(["label"])(e.target.value)} />
      </Field>
      {codeProps.map(([k, p]) => (
        <div className="field" key={k} data-code-field={k}>
          <label htmlFor={`node-code-${k}`}>{p.title ?? k}</label>
          <ExpressionInput
            id={`node-code-${k}`}
            label={p.title ?? k}
            value={d[k] ?? ""}
            onChange={set([k])}
            scope={scope}
            rows={10}
            language="javascript"
            invalid={at(k).length > 0}
          />
          <p className="hint">Names: input, run, steps, vars, item, entity — click a field in the data panel to insert it.</p>
        </div>
      ))}
      {(incoming.length > 1 || d.join !== undefined) && !info?.capabilities?.collects && (
        <Field
          label="Fires"
          id="node-join"
          hint={
            d.join === "any"
              ? `On the first of its ${incoming.length} incoming steps to arrive, with that step's output; the other branches leading here are cancelled (a running worker is told, a step not started is skipped).`
              : "Once every incoming step has arrived (or been skipped), with their outputs merged."
          }
        >
          <select id="node-join" value={d.join === "any" ? "any" : "all"} onChange={(e) => set(["join"])(e.target.value === "any" ? "any" : undefined)}>
            <option value="all">when all incoming steps arrived</option>
            <option value="any">on the first arrival (cancel the others)</option>
          </select>
        </Field>
      )}
      <ServerProblems problems={at("join")} id={node.id} />
      {schemaForm && (
        <div className="type-config" data-type-config={type}>
          <TaskForm
            inside
            id={`cfg-${node.id}`}
            schema={schemaForm}
            value={withoutKeys(d, [...kept, "_problems", "_run", "_pinned"])}
            onChange={(v) => onChange(node.id, { ...(v ?? {}), ...Object.fromEntries([...kept, "_pinned"].filter((k) => d[k] !== undefined).map((k) => [k, d[k]])) })}
            serverProblems={[]}
          />
        </div>
      )}
      {type === "Worker" && (
        <>
          <fieldset className="worker-mode" data-worker-mode={d.queue !== undefined ? "pull" : "push"}>
            <legend>How the work reaches your service</legend>
            <label className="inline">
              <input
                type="radio"
                name={`worker-mode-${node.id}`}
                checked={d.queue === undefined}
                onChange={() => onChange(node.id, { ...withoutKeys(d, ["queue", "leaseSeconds"]), webhookUrl: d.webhookUrl ?? "" })}
              />{" "}
              Push: stitchd POSTs it to a webhook
            </label>
            <label className="inline">
              <input
                type="radio"
                name={`worker-mode-${node.id}`}
                checked={d.queue !== undefined}
                onChange={() => onChange(node.id, { ...withoutKeys(d, ["webhookUrl", "cancelUrl", "delivery", "rateLimit", "timeoutSeconds"]), queue: d.queue ?? "" })}
              />{" "}
              Pull: it waits in a queue your workers poll
            </label>
          </fieldset>
          {d.queue === undefined ? (
            <>
              <Field label="Webhook URL" id="node-url" hint="stitchd POSTs the work here; your service calls back.">
                <input id="node-url" type="url" placeholder="https://worker.example.com/score" value={d.webhookUrl ?? ""} onChange={(e) => set(["webhookUrl"])(e.target.value)} />
              </Field>
              <Field label="Timeout (seconds)" id="node-timeout" hint="Without a callback or heartbeat by then, the attempt fails. Default 300.">
                <input id="node-timeout" type="number" min={1} value={d.timeoutSeconds ?? ""} onChange={(e) => set(["timeoutSeconds"])(num(e.target.value))} />
              </Field>
            </>
          ) : (
            <>
              <Field label="Queue" id="node-queue" hint="Workers take the work with POST /api/v1/tasks/poll {queue: …} and call back as a pushed worker does.">
                <input id="node-queue" className="mono" placeholder="billing" value={d.queue ?? ""} onChange={(e) => set(["queue"])(e.target.value)} />
              </Field>
              <Field label="Lease (seconds)" id="node-lease" hint="How long a polled task is its worker's; a heartbeat extends it; when it runs out the attempt times out. Default 300.">
                <input id="node-lease" type="number" min={1} max={86400} value={d.leaseSeconds ?? ""} onChange={(e) => set(["leaseSeconds"])(num(e.target.value))} />
              </Field>
            </>
          )}
          <RetryFields retry={d.retry} set={(k) => set(["retry", k])} />
        </>
      )}
      {type === "HTTP" && <HTTPFields data={d} onChange={(nd) => onChange(node.id, nd)} problemsAt={at} nodeId={node.id} />}
      {type === "Event" && <EventFields data={d} onChange={(nd) => onChange(node.id, nd)} problemsAt={at} nodeId={node.id} />}
      {type === "Respond" && <RespondFields data={d} onChange={(nd) => onChange(node.id, nd)} problemsAt={at} nodeId={node.id} />}
      {type === "SubFlow" && <SubFlowFields data={d} onChange={(nd) => onChange(node.id, nd)} problemsAt={at} nodeId={node.id} selfId={flowId} />}
      {type === "UX" && (
        <>
          <Field label="Prompt" id="node-prompt" hint="What the person is asked in the approvals inbox.">
            <textarea id="node-prompt" rows={3} value={d.prompt ?? ""} onChange={(e) => set(["prompt"])(e.target.value)} />
          </Field>
          <OutcomesEditor
            nodeId={node.id}
            data={d}
            outgoing={outgoing}
            onChange={(next, rename) => {
              let nd: Record<string, any> = { ...d, outcomes: next };
              const by = d.entityMovement?.onOutcome;
              if (rename && by?.[rename[0]] && !by[rename[1]]) {
                const { [rename[0]]: moved, ...rest } = by;
                nd = { ...nd, entityMovement: { ...d.entityMovement, onOutcome: { ...rest, [rename[1]]: moved } } };
              }
              if (rename && d.onTimeout === rename[0]) nd.onTimeout = rename[1];
              onChange(node.id, nd);
              if (rename) onRenameOutcome(node.id, rename[0], rename[1]);
            }}
          />
          <UXTimeout data={d} onChange={(nd) => onChange(node.id, nd)} problemsAt={at} />
          <UXPeople key={`people-${node.id}`} data={d} onChange={(nd) => onChange(node.id, nd)} problemsAt={at} />
          <UXForm key={`form-${node.id}`} nodeId={node.id} data={d} onChange={(nd) => onChange(node.id, nd)} problems={at("form")} />
          <SummaryEditor
            key={`summary-${node.id}`}
            summary={d.summary}
            onChange={(next) => {
              const { summary: _old, ...rest } = d;
              onChange(node.id, next ? { ...rest, summary: next } : rest);
            }}
          />
          {at("summary").length > 0 && (
            <p className="field-error" role="alert">
              {at("summary")
                .map((p) => p.message)
                .join("; ")}
            </p>
          )}
        </>
      )}
      {type === "Transform" && (
        <ExpressionField value={d.expression ?? ""} onChange={set(["expression"])} problems={at("expression")} nodeId={node.id} scope={scope}>
          <ExprPreview flowId={flowId} nodeId={node.id} text={d.expression ?? ""} sample={stepData.sample} graph={graph} />
        </ExpressionField>
      )}
      {type === "Wait" && <WaitFields data={d} onChange={(nd) => onChange(node.id, nd)} problemsAt={at} />}
      {type === "Splitter" && (
        <Field label="Array path" id="node-array" hint="A gjson path into the input, e.g. contacts or lead.contacts. One parallel path per item.">
          <input id="node-array" className="mono" value={d.arrayPath ?? ""} onChange={(e) => set(["arrayPath"])(e.target.value)} />
        </Field>
      )}
      <DataPanel
        scope={scope}
        output={stepData.output}
        from={stepData.from}
        tested={stepData.tested}
        condition={false}
        onPin={() => pin(stepData.sample)}
        onUnpin={() => pin(null)}
      />
      {moves &&
        (["onSuccess", "onFailure"] as const).map((when) => (
          <Movement
            key={when}
            legend={`Entity movement ${when === "onSuccess" ? "on success" : "on failure"}`}
            idp={`node-${when}`}
            value={d.entityMovement?.[when]}
            sections={sections}
            onChange={(field, v) => set(["entityMovement", when, field])(v)}
          />
        ))}
      {type === "UX" && (
        <details className="by-outcome" open={!!d.entityMovement?.onOutcome && Object.keys(d.entityMovement.onOutcome).length > 0}>
          <summary>Entity movement by outcome</summary>
          <p className="hint">A movement set for the outcome a person chose replaces the one on success or failure.</p>
          {outcomesOf(d).map((o, i) => (
            <Movement
              key={o}
              legend={`When “${o}” is chosen`}
              idp={`node-outcome-${i}`}
              value={d.entityMovement?.onOutcome?.[o]}
              sections={sections}
              onChange={(field, v) => set(["entityMovement", "onOutcome", o, field])(v)}
            />
          ))}
        </details>
      )}
      {outgoing.length > 0 && (
        <fieldset>
          <legend>Outgoing edges</legend>
          <ul className="edge-list" aria-label={`Edges from ${node.id}`}>
            {outgoing.map((e) => (
              <li key={e.id}>
                <button type="button" className="linklike" onClick={() => onSelectEdge(e.id)} aria-label={`Edit edge ${e.id} to ${e.target}`}>
                  → {e.target}
                </button>{" "}
                <span className={`edge-chip edge-chip-${edgeKind(e.data)}`}>{edgeLabel(e.data) ?? "always"}</span>
              </li>
            ))}
          </ul>
        </fieldset>
      )}
      {targets.length > 0 && (
        <fieldset>
          <legend>Connect</legend>
          <div className="row">
            <label htmlFor="node-connect" className="sr-only">
              Connect {node.id} to
            </label>
            <select id="node-connect" value={target} onChange={(e) => setTarget(e.target.value)}>
              <option value="">Connect to…</option>
              {targets.map((n) => (
                <option key={n.id} value={n.id}>
                  {n.id}
                </option>
              ))}
            </select>
            <button
              type="button"
              className="btn small"
              disabled={!target}
              onClick={() => {
                onConnect(target);
                setTarget("");
              }}
            >
              Add edge
            </button>
          </div>
        </fieldset>
      )}
      </>
      )}
      <button type="button" className="btn danger" onClick={() => onDelete(node.id)}>
        Delete node
      </button>
    </form>
  );
}

// OutcomesEditor edits a UX node's outcomes: one button each in the
// approvals inbox; an edge with that outcome is taken when a person picks it.
function OutcomesEditor({
  nodeId,
  data,
  outgoing,
  onChange,
}: {
  nodeId: string;
  data: Record<string, any>;
  outgoing: Edge[];
  onChange: (next: string[], rename?: [string, string]) => void;
}) {
  const list: string[] = Array.isArray(data.outcomes) ? data.outcomes.map((x: unknown) => String(x ?? "")) : DEFAULT_OUTCOMES;
  const named = list.map((o) => o.trim());
  const dupes = new Set(named.filter((o, i) => o && named.indexOf(o) !== i));
  const used = new Set(outgoing.filter((e) => edgeKind(e.data) === "outcome").map((e) => String((e.data as any).outcome)));
  const effective = outcomesOf({ outcomes: list });
  const unknown = outgoing.filter((e) => edgeKind(e.data) === "outcome" && !effective.includes(String((e.data as any).outcome)));
  // The first outcome completes the step even without an edge of its own
  // (taking the plain edges); any other without an edge fails it.
  const without = effective.slice(1).filter((o) => !used.has(o));
  return (
    <fieldset className="outcomes" aria-label={`Outcomes of ${nodeId}`}>
      <legend>Outcomes</legend>
      <p className="muted small">One button each in the approvals inbox. An edge set to an outcome is taken when a person chooses it.</p>
      {list.map((o, i) => (
        <div className="row" key={i}>
          <label className="sr-only" htmlFor={`outcome-${i}`}>
            Outcome {i + 1}
          </label>
          <input
            id={`outcome-${i}`}
            className="mono"
            placeholder="e.g. approve"
            maxLength={64}
            value={o}
            aria-invalid={!o.trim() || dupes.has(o.trim())}
            onChange={(e) => {
              const v = e.target.value;
              const next = list.map((x, j) => (j === i ? v : x));
              const renamed = o.trim() && v.trim() && o.trim() !== v.trim() && !dupes.has(o.trim());
              onChange(next, renamed ? [o.trim(), v.trim()] : undefined);
            }}
          />
          <button
            type="button"
            className="btn ghost small"
            aria-label={`Remove outcome ${o || i + 1}`}
            disabled={list.length <= 1}
            onClick={() => onChange(list.filter((_, j) => j !== i))}
          >
            ×
          </button>
        </div>
      ))}
      <button type="button" className="btn small" onClick={() => onChange([...list, ""])}>
        Add outcome
      </button>
      {named.some((o) => !o) && (
        <p className="field-error" role="alert">
          Name every outcome (an empty one is left out when you save).
        </p>
      )}
      {dupes.size > 0 && (
        <p className="field-error" role="alert">
          Each outcome needs its own name: {[...dupes].join(", ")} is there twice.
        </p>
      )}
      {unknown.map((e) => (
        <p key={e.id} className="field-error" role="alert">
          Edge {e.id} → {e.target} is taken on “{String((e.data as any).outcome)}”, which this step does not offer.
        </p>
      ))}
      {without.length > 0 && (
        <p className="hint">
          No edge for {without.map((o) => `“${o}”`).join(", ")}: choosing {without.length === 1 ? "it" : "one of them"} fails this step
          {outgoing.some((e) => edgeKind(e.data) === "failure") ? " (its failure edge is taken)" : ""}.
        </p>
      )}
    </fieldset>
  );
}

// ServerProblems shows the server's messages about one field, marked
// stale once the field was edited after the save that found them.
export function ServerProblems({ problems, id, src }: { problems: (Problem & { stale?: boolean })[]; id: string; src?: string }) {
  return (
    <>
      {problems.map((p, i) => (
        <p key={i} className={`field-error ${p.stale ? "stale" : ""}`} role="alert" data-check="server">
          ⚠ {p.stale ? "At the last save: " : ""}
          <PlainProblem message={problemText(p.message, id)} path={p.path} src={p.stale ? undefined : src} />
        </p>
      ))}
    </>
  );
}

// ExpressionField edits a Transform's expression: its value is the
// node's output. Slips are caught as you type; the server compiles it
// when the flow is saved and its message is shown here.
function ExpressionField({
  value,
  onChange,
  problems,
  nodeId,
  scope,
  children,
}: {
  value: string;
  onChange: (v: string) => void;
  problems: (Problem & { stale?: boolean })[];
  nodeId: string;
  scope: Scope;
  children?: React.ReactNode;
}) {
  const empty = "Write an expression whose value is the output, e.g. {\"name\": upper(input.first)}.";
  const [check, setCheck] = useState<string | null>(() => (value ? checkExpression(value, empty) : null));
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    const t = window.setTimeout(() => setCheck(checkExpression(value, empty)), 350);
    return () => window.clearTimeout(t);
  }, [value, empty]);
  return (
    <div className="field">
      <label htmlFor="node-expression">Expression</label>
      <ExpressionInput
        id="node-expression"
        label="Expression"
        rows={5}
        placeholder='{"name": upper(input.first), "hot": input.employees > 100}'
        value={value}
        scope={scope}
        invalid={!!check || problems.some((p) => !p.stale)}
        describedBy="node-expression-help"
        onChange={onChange}
      />
      {children}
      <p className="hint" id="node-expression-help">
        An <a href="https://expr-lang.org/docs/language-definition" target="_blank" rel="noreferrer">expr</a> expression; its value is this step's output.
        Names: <code>input</code> (this step's input), <code>run.id</code>, <code>run.input</code>, <code>entity</code> (or nil), <code>steps.&lt;id&gt;.output</code>,{" "}
        <code>vars.&lt;name&gt;</code> (Ctrl-Space lists them). E.g.{" "}
        <code>{`{"name": upper(input.first), "hot": input.employees > 100}`}</code>. It is compiled when you save; an error while it runs fails the step with
        the reason.
      </p>
      {check && (
        <p className="field-error" role="alert" data-check="local">
          {check}
        </p>
      )}
      <ServerProblems problems={problems} id={nodeId} src={value} />
    </div>
  );
}

// Common IANA zones, for browsers that cannot list their own.
const ZONES = [
  "UTC",
  "Europe/London",
  "Europe/Paris",
  "Europe/Berlin",
  "Europe/Madrid",
  "Europe/Moscow",
  "America/New_York",
  "America/Chicago",
  "America/Denver",
  "America/Los_Angeles",
  "America/Sao_Paulo",
  "Asia/Dubai",
  "Asia/Kolkata",
  "Asia/Singapore",
  "Asia/Shanghai",
  "Asia/Tokyo",
  "Australia/Sydney",
  "Pacific/Auckland",
];

export function zones(): string[] {
  try {
    const all = (Intl as any).supportedValuesOf?.("timeZone") as string[] | undefined;
    if (all?.length) return ["UTC", ...all.filter((z) => z !== "UTC")];
  } catch {
    /* an older browser: the common ones */
  }
  return ZONES;
}

export function knownZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat("en", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

// WaitFields edits a Wait node: it waits for a duration, or until a time
// (an RFC 3339 time, or an expression giving one) read in a timezone when
// it has no offset. The server takes one of duration and until.
function WaitFields({
  data,
  onChange,
  problemsAt,
}: {
  data: Record<string, any>;
  onChange: (d: Record<string, any>) => void;
  problemsAt: (field: string) => (Problem & { stale?: boolean })[];
}) {
  const [mode, setMode] = useState<"duration" | "until">(() => (data.until !== undefined && data.duration === undefined ? "until" : "duration"));
  // What was typed in the other mode comes back when you switch back.
  const kept = useRef<Record<string, any>>({});
  const [zoneList] = useState(zones);
  const switchTo = (m: "duration" | "until") => {
    if (m === mode) return;
    const next: Record<string, any> = { ...data };
    const away = m === "duration" ? ["until", "timezone"] : ["duration"];
    for (const k of away) {
      if (next[k] !== undefined) kept.current[k] = next[k];
      delete next[k];
    }
    for (const k of m === "duration" ? ["duration"] : ["until", "timezone"]) if (kept.current[k] !== undefined && next[k] === undefined) next[k] = kept.current[k];
    setMode(m);
    onChange(next);
  };
  const put = (k: string, v: string) => {
    const next = { ...data };
    if (v === "") delete next[k];
    else next[k] = v;
    onChange(next);
  };
  const dur = typeof data.duration === "string" ? data.duration : "";
  const until = typeof data.until === "string" ? data.until : "";
  const tz = typeof data.timezone === "string" ? data.timezone : "";
  const secs = parseDuration(dur);
  const time = parseTime(until);
  const both = data.duration !== undefined && data.until !== undefined;
  return (
    <fieldset className="wait-fields" aria-label="Wait">
      <legend>Wait</legend>
      <div className="tabs" role="radiogroup" aria-label="Wait how">
        <label className={mode === "duration" ? "active" : ""}>
          <input type="radio" name="wait-mode" value="duration" checked={mode === "duration"} onChange={() => switchTo("duration")} /> for a duration
        </label>
        <label className={mode === "until" ? "active" : ""}>
          <input type="radio" name="wait-mode" value="until" checked={mode === "until"} onChange={() => switchTo("until")} /> until a time
        </label>
      </div>
      {both && (
        <p className="field-error" role="alert">
          This step has both a duration and an until time: keep one (switch to the other and back to drop it).
        </p>
      )}
      {mode === "duration" ? (
        <div className="field">
          <label htmlFor="node-duration">Duration</label>
          <input
            id="node-duration"
            className="mono"
            placeholder="48h, 90m, P2D, PT1H30M"
            value={dur}
            aria-invalid={(!!dur.trim() && secs === null) || problemsAt("duration").some((p) => !p.stale)}
            onChange={(e) => put("duration", e.target.value)}
          />
          {!dur.trim() ? (
            <p className="hint">Go (48h, 90m, 1h30m) or ISO-8601 (P2D, PT1H30M). Counted from when the step starts, on the server's clock.</p>
          ) : secs === null ? (
            <p className="field-error" role="alert" data-check="local">
              Not a duration: write 48h, 90m, 1h30m, P2D or PT1H30M.
            </p>
          ) : (
            <p className="hint" data-wait-preview>
              Waits {secs === 0 ? "not at all" : span(secs * 1000)} after the step starts.
            </p>
          )}
          <ServerProblems problems={problemsAt("duration")} id="" />
        </div>
      ) : (
        <>
          <div className="field">
            <label htmlFor="node-until">Until</label>
            <input
              id="node-until"
              className="mono"
              placeholder="2026-12-01T09:00:00+01:00 or input.due_at"
              value={until}
              spellCheck={false}
              aria-invalid={problemsAt("until").some((p) => !p.stale)}
              onChange={(e) => put("until", e.target.value)}
            />
            <p className="hint" data-wait-preview>
              {!until.trim()
                ? "A time (RFC 3339, e.g. 2026-12-01T09:00:00+01:00) or an expression over input, run and entity giving one, e.g. input.due_at."
                : time?.offset
                  ? `Waits until ${time.date.toLocaleString()} (your time).`
                  : time
                    ? `A time without an offset: read in ${tz || "UTC"}.`
                    : "An expression: evaluated when the step starts; it must give a time. A time already past goes on at once."}
            </p>
            <ServerProblems problems={problemsAt("until")} id="" />
          </div>
          <div className="field">
            <label htmlFor="node-timezone">Timezone</label>
            <input
              id="node-timezone"
              list="node-timezones"
              placeholder="UTC"
              value={tz}
              aria-invalid={(!!tz && !knownZone(tz)) || problemsAt("timezone").some((p) => !p.stale)}
              onChange={(e) => put("timezone", e.target.value)}
            />
            <datalist id="node-timezones">
              {zoneList.map((z) => (
                <option key={z} value={z} />
              ))}
            </datalist>
            {tz && !knownZone(tz) ? (
              <p className="field-error" role="alert" data-check="local">
                “{tz}” is not an IANA time zone (Europe/Paris, America/New_York).
              </p>
            ) : (
              <p className="hint">For times without an offset. Empty: UTC.</p>
            )}
            <ServerProblems problems={problemsAt("timezone")} id="" />
          </div>
        </>
      )}
    </fieldset>
  );
}

// UXTimeout edits how long a UX step waits for a person and what happens
// then: the step fails, or one of its outcomes is chosen for the person.
function UXTimeout({
  data,
  onChange,
  problemsAt,
}: {
  data: Record<string, any>;
  onChange: (d: Record<string, any>) => void;
  problemsAt: (field: string) => (Problem & { stale?: boolean })[];
}) {
  const outcomes = outcomesOf(data);
  const secs = typeof data.timeoutSeconds === "number" ? data.timeoutSeconds : undefined;
  const on = typeof data.onTimeout === "string" ? data.onTimeout : "fail";
  const unknown = on !== "fail" && !outcomes.includes(on);
  return (
    <fieldset className="ux-timeout">
      <legend>Timeout</legend>
      <div className="field">
        <label htmlFor="node-timeout">Timeout (seconds)</label>
        <input
          id="node-timeout"
          type="number"
          min={1}
          step={1}
          placeholder="waits forever"
          value={secs ?? ""}
          aria-invalid={problemsAt("timeoutSeconds").some((p) => !p.stale)}
          onChange={(e) => {
            const v = num(e.target.value);
            const next = { ...data };
            if (v === undefined || isNaN(v)) {
              delete next.timeoutSeconds;
              delete next.onTimeout; // the server refuses an onTimeout without a timeout
            } else next.timeoutSeconds = v;
            onChange(next);
          }}
        />
        <p className="hint">{secs === undefined
            ? "Empty: it waits for a person forever."
            : secs > 0
              ? `If nobody answers within ${span(secs * 1000)}, the step times out.`
              : "A timeout is more than 0 seconds."}</p>
        <ServerProblems problems={problemsAt("timeoutSeconds")} id="" />
      </div>
      {secs !== undefined && (
        <div className="field">
          <label htmlFor="node-ontimeout">On timeout</label>
          <select
            id="node-ontimeout"
            value={on}
            aria-invalid={unknown || problemsAt("onTimeout").some((p) => !p.stale)}
            onChange={(e) => {
              const next = { ...data };
              if (e.target.value === "fail") delete next.onTimeout;
              else next.onTimeout = e.target.value;
              onChange(next);
            }}
          >
            <option value="fail">fail the step</option>
            {(unknown ? [on, ...outcomes] : outcomes).map((o) => (
              <option key={o} value={o}>
                choose “{o}”{outcomes.includes(o) ? "" : " (not offered)"}
              </option>
            ))}
          </select>
          {unknown ? (
            <p className="field-error" role="alert" data-check="local">
              “{on}” is not one of this step's outcomes any more: choose another.
            </p>
          ) : (
            <p className="hint">
              {on === "fail" ? "The step fails (a failure edge takes it on)." : `As if a person chose “${on}”: its edge is taken, the decision is by “timeout”.`}
            </p>
          )}
          <ServerProblems problems={problemsAt("onTimeout")} id="" />
        </div>
      )}
    </fieldset>
  );
}

// The UX settings of who decides and what they answer.
const UX_PEOPLE_FIELDS = ["assignees", "requiredApprovals", "rejectPolicy", "separationOfDuties", "form"];

// splitList reads a comma- or newline-separated list.
function splitList(s: string): string[] {
  return s
    .split(/[,\n]/)
    .map((x) => x.trim())
    .filter(Boolean);
}

// UXPeople edits who may decide a UX step: its assignees (anyone; people
// and groups; or an expression over the input that names them), how many
// must agree (requiredApprovals, N of M), whether one reject is enough,
// and whether the person who started the run is kept out.
function UXPeople({
  data,
  onChange,
  problemsAt,
}: {
  data: Record<string, any>;
  onChange: (d: Record<string, any>) => void;
  problemsAt: (field: string) => (Problem & { stale?: boolean })[];
}) {
  const a = data.assignees;
  const initial: "anyone" | "list" | "expr" = typeof a === "string" ? "expr" : a && typeof a === "object" ? "list" : "anyone";
  const [mode, setMode] = useState(initial);
  const [users, setUsers] = useState<string>(Array.isArray(a?.users) ? a.users.join(", ") : "");
  const [groups, setGroups] = useState<string>(Array.isArray(a?.groups) ? a.groups.join(", ") : "");
  const [expr, setExpr] = useState<string>(typeof a === "string" ? a : "");
  const set = (patch: Record<string, any>) => {
    const next = { ...data };
    for (const [k, v] of Object.entries(patch)) {
      if (v === undefined) delete next[k];
      else next[k] = v;
    }
    onChange(next);
  };
  const listOf = (u: string, g: string) => {
    const us = splitList(u);
    const gs = splitList(g);
    if (!us.length && !gs.length) return { users: [] as string[] }; // the server says it names no one
    return { ...(us.length ? { users: us } : {}), ...(gs.length ? { groups: gs } : {}) };
  };
  const choose = (m: typeof mode) => {
    setMode(m);
    set({ assignees: m === "anyone" ? undefined : m === "expr" ? expr || undefined : listOf(users, groups) });
  };
  const required = typeof data.requiredApprovals === "number" ? data.requiredApprovals : undefined;
  const requiredBad = required !== undefined && (!Number.isInteger(required) || required < 1);
  const listed = mode === "list" ? splitList(users).length : 0;
  const tooMany = mode === "list" && !splitList(groups).length && required !== undefined && required > listed;
  const badEmails = mode === "list" ? splitList(users).filter((u) => !/^[^@\s]+@[^@\s]+$/.test(u)) : [];
  return (
    <fieldset className="ux-people">
      <legend>Who decides</legend>
      <div className="tabs" role="radiogroup" aria-label="Assigned to">
        {(
          [
            ["anyone", "Anyone"],
            ["list", "People and groups"],
            ["expr", "From the input"],
          ] as const
        ).map(([m, label]) => (
          <label key={m} className={mode === m ? "active" : ""}>
            <input type="radio" name="node-assign-mode" value={m} checked={mode === m} onChange={() => choose(m)} data-assign-mode={m} /> {label}
          </label>
        ))}
      </div>
      {mode === "anyone" && <p className="hint">Any approver (or admin) may decide.</p>}
      {mode === "list" && (
        <>
          <div className="field">
            <label htmlFor="node-assign-users">People (emails)</label>
            <textarea
              id="node-assign-users"
              rows={2}
              placeholder="ann@example.com, bob@example.com"
              value={users}
              aria-invalid={badEmails.length > 0}
              onChange={(e) => {
                setUsers(e.target.value);
                set({ assignees: listOf(e.target.value, groups) });
              }}
            />
            {badEmails.length > 0 && (
              <p className="field-error" role="alert" data-check="local">
                Not an email: {badEmails.join(", ")}
              </p>
            )}
          </div>
          <div className="field">
            <label htmlFor="node-assign-groups">Groups</label>
            <input
              id="node-assign-groups"
              placeholder="finance, legal"
              value={groups}
              onChange={(e) => {
                setGroups(e.target.value);
                set({ assignees: listOf(users, e.target.value) });
              }}
            />
            <p className="hint">Comma-separated. A member of any of them may decide.</p>
          </div>
        </>
      )}
      {mode === "expr" && (
        <div className="field">
          <label htmlFor="node-assign-expr">Assignees expression</label>
          <input
            id="node-assign-expr"
            className="mono"
            placeholder="input.owner_email"
            value={expr}
            onChange={(e) => {
              setExpr(e.target.value);
              set({ assignees: e.target.value.trim() ? e.target.value : undefined });
            }}
          />
          <p className="hint">
            Evaluated over <code>input</code>, <code>run</code> and <code>entity</code> when the step starts waiting: an email, a list of emails, or{" "}
            <code>{"{users: [...], groups: [...]}"}</code>.
          </p>
        </div>
      )}
      <ServerProblems problems={problemsAt("assignees")} id="" />
      <div className="field">
        <label htmlFor="node-required">Approvals needed</label>
        <input
          id="node-required"
          type="number"
          min={1}
          step={1}
          placeholder="1"
          value={required ?? ""}
          aria-invalid={requiredBad || tooMany}
          onChange={(e) => set({ requiredApprovals: num(e.target.value) === undefined || isNaN(num(e.target.value)!) ? undefined : num(e.target.value) })}
        />
        {requiredBad ? (
          <p className="field-error" role="alert" data-check="local">
            A whole number, 1 or more.
          </p>
        ) : tooMany ? (
          <p className="field-error" role="alert" data-check="local">
            {required} approvals from {listed} {listed === 1 ? "person" : "people"}: it could never complete.
          </p>
        ) : (
          <p className="hint">
            {required && required > 1 ? `${required} different people must choose the same outcome.` : "One person's decision is enough."}
          </p>
        )}
        <ServerProblems problems={problemsAt("requiredApprovals")} id="" />
      </div>
      {required !== undefined && required > 1 && (
        <div className="field">
          <label htmlFor="node-reject-policy">A reject</label>
          <select id="node-reject-policy" value={data.rejectPolicy ?? "any"} onChange={(e) => set({ rejectPolicy: e.target.value === "any" ? undefined : e.target.value })}>
            <option value="any">decides at once (one reject is enough)</option>
            <option value="majority">needs as many votes as an approval</option>
          </select>
          <ServerProblems problems={problemsAt("rejectPolicy")} id="" />
        </div>
      )}
      <div className="field check">
        <label>
          <input
            type="checkbox"
            id="node-sod"
            checked={data.separationOfDuties === true}
            onChange={(e) => set({ separationOfDuties: e.target.checked ? true : undefined })}
          />{" "}
          Separation of duties
        </label>
        <p className="hint">The person who started the run may not decide this step (admins included).</p>
        <ServerProblems problems={problemsAt("separationOfDuties")} id="" />
      </div>
    </fieldset>
  );
}

const FORM_EXAMPLE = {
  type: "object",
  required: ["amount", "reason"],
  properties: {
    amount: { type: "number", minimum: 0, title: "Amount (EUR)" },
    reason: { enum: ["damaged", "late", "other"], title: "Reason" },
    note: { type: "string", maxLength: 500, title: "Note" },
  },
};

// UXForm edits a UX step's form: a JSON Schema (2020-12) of the answer,
// checked as JSON here and compiled by the server when the flow is saved
// (422 invalid_form at its place in the form). A text that is not JSON is
// kept as it is, so saving says so instead of silently keeping the old one.
function UXForm({
  nodeId,
  data,
  onChange,
  problems,
}: {
  nodeId: string;
  data: Record<string, any>;
  onChange: (d: Record<string, any>) => void;
  problems: (Problem & { stale?: boolean })[];
}) {
  const f = data.form;
  const [text, setText] = useState(f === undefined || f === null ? "" : typeof f === "string" ? f : JSON.stringify(f, null, 2));
  const [preview, setPreview] = useState<any>(undefined);
  let parsed: any = undefined;
  let jsonError: string | null = null;
  if (text.trim()) {
    try {
      parsed = JSON.parse(text);
      if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) jsonError = "A form is a JSON object (a JSON Schema), e.g. {\"type\": \"object\", …}.";
    } catch (e) {
      jsonError = `Not JSON: ${(e as Error).message}`;
    }
  }
  const update = (t: string) => {
    setText(t);
    const next = { ...data };
    if (!t.trim()) delete next.form;
    else {
      try {
        next.form = JSON.parse(t);
      } catch {
        next.form = t; // saving is refused with the server's message
      }
    }
    onChange(next);
  };
  return (
    <fieldset className="ux-form">
      <legend>Answer form</legend>
      <p className="hint">
        Optional: a JSON Schema of the answer. The inbox shows it as a form, and stitchd refuses an answer that does not fit. See docs/forms.md.
      </p>
      <div className="field">
        <label htmlFor="node-form">Form (JSON Schema)</label>
        <textarea
          id="node-form"
          className="mono"
          rows={8}
          spellCheck={false}
          placeholder='{"type": "object", "required": ["amount"], "properties": {"amount": {"type": "number", "minimum": 1}}}'
          value={text}
          aria-invalid={!!jsonError || problems.some((p) => !p.stale)}
          onChange={(e) => update(e.target.value)}
        />
        {jsonError && (
          <p className="field-error" role="alert" data-check="local">
            {jsonError}
          </p>
        )}
        <ServerProblems problems={problems} id="" />
        {!text.trim() && (
          <button type="button" className="btn small" onClick={() => update(JSON.stringify(FORM_EXAMPLE, null, 2))}>
            Start from an example
          </button>
        )}
      </div>
      {parsed && !jsonError && (
        <details className="form-preview">
          <summary>Preview</summary>
          <TaskForm id={`preview-${nodeId}`} schema={parsed} value={preview} onChange={setPreview} serverProblems={[]} />
        </details>
      )}
    </fieldset>
  );
}

// checkExpression catches slips as you type (an empty expression, an
// unclosed bracket or string, a trailing operator). The server's compile
// is the truth: names and types are checked when the flow is saved.
export function checkExpression(src: string, empty = "Write an expression that is true or false, e.g. output.score > 50."): string | null {
  const s = src.trim();
  if (!s) return empty;
  const stack: string[] = [];
  const pairs: Record<string, string> = { ")": "(", "]": "[", "}": "{" };
  let quote = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (quote) {
      if (c === "\\" && quote !== "`") i++;
      else if (c === quote) quote = "";
      continue;
    }
    if (c === '"' || c === "'" || c === "`") quote = c;
    else if (c === "(" || c === "[" || c === "{") stack.push(c);
    else if (c in pairs) {
      if (stack.pop() !== pairs[c]) return `“${c}” at column ${i + 1} closes nothing.`;
    } else if (c === "=" && !/let\s/.test(s)) {
      const prev = s[i - 1] ?? "";
      const next = s[i + 1] ?? "";
      if (next === "=") i++;
      else if (!"=!<>".includes(prev)) return `Compare with == (a single = at column ${i + 1}).`;
    }
  }
  if (quote) return "A string is not closed.";
  if (stack.length) return `“${stack[stack.length - 1]}” is not closed.`;
  if (/(&&|\|\||[+\-*/%<>=!.,]|\b(and|or|not|in|matches|contains)\b)$/.test(s)) return "The expression ends with an operator.";
  return null;
}

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

// Movement edits one entity movement: the section to move to, how the
// step completes for the entity, and an optional new entity type.
function Movement({
  legend,
  idp,
  value,
  sections,
  onChange,
}: {
  legend: string;
  idp: string;
  value: Record<string, any> | undefined;
  sections: { id: string; name: string }[] | null;
  onChange: (field: "targetSectionId" | "completeAs" | "setEntityType", v: string) => void;
}) {
  return (
    <fieldset>
      <legend>{legend}</legend>
      <Field label="Move to section" id={`${idp}-section`}>
        {sections ? (
          <select id={`${idp}-section`} value={value?.targetSectionId ?? ""} onChange={(e) => onChange("targetSectionId", e.target.value)}>
            <option value="">Do not move</option>
            {sections.map((s) => (
              <option key={s.id} value={s.id}>
                {s.name}
              </option>
            ))}
          </select>
        ) : (
          <input
            id={`${idp}-section`}
            placeholder="section id (choose a board for a list)"
            value={value?.targetSectionId ?? ""}
            onChange={(e) => onChange("targetSectionId", e.target.value)}
          />
        )}
      </Field>
      <Field label="Complete as" id={`${idp}-as`}>
        <select id={`${idp}-as`} value={value?.completeAs ?? ""} onChange={(e) => onChange("completeAs", e.target.value)}>
          <option value="">—</option>
          <option value="success">success</option>
          <option value="failure">failure</option>
          <option value="neutral">neutral</option>
        </select>
      </Field>
      <Field label="Set entity type" id={`${idp}-type`}>
        <input id={`${idp}-type`} placeholder="e.g. customer" value={value?.setEntityType ?? ""} onChange={(e) => onChange("setEntityType", e.target.value)} />
      </Field>
    </fieldset>
  );
}

export function Field({ label, id, hint, error, children }: { label: string; id: string; hint?: string; error?: string | null; children: React.ReactNode }) {
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children}
      {hint && <p className="hint">{hint}</p>}
      {error && (
        <p className="field-error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}

// RetryFields edits a retry policy (a Worker's or an HTTP node's).
export function RetryFields({ retry, set }: { retry: Record<string, any> | undefined; set: (k: string) => (v: any) => void }) {
  return (
    <fieldset>
      <legend>Retry</legend>
      <Field label="Max attempts" id="node-attempts" hint="Default 3.">
        <input id="node-attempts" type="number" min={1} value={retry?.maxAttempts ?? ""} onChange={(e) => set("maxAttempts")(num(e.target.value))} />
      </Field>
      <Field label="Backoff" id="node-backoff">
        <select id="node-backoff" value={retry?.backoff ?? ""} onChange={(e) => set("backoff")(e.target.value)}>
          <option value="">default (exponential)</option>
          <option value="exponential">exponential</option>
          <option value="fixed">fixed</option>
        </select>
      </Field>
      <Field label="Initial delay (ms)" id="node-initial">
        <input id="node-initial" type="number" min={0} value={retry?.initialDelayMs ?? ""} onChange={(e) => set("initialDelayMs")(num(e.target.value))} />
      </Field>
      <Field label="Max delay (ms)" id="node-maxdelay">
        <input id="node-maxdelay" type="number" min={0} value={retry?.maxDelayMs ?? ""} onChange={(e) => set("maxDelayMs")(num(e.target.value))} />
      </Field>
    </fieldset>
  );
}

// withoutKeys is obj (a schema's properties, or data) without keys.
function withoutKeys(obj: Record<string, any>, keys: string[]): Record<string, any> {
  const out = { ...obj };
  if (out.properties && typeof out.properties === "object") {
    out.properties = { ...out.properties };
    for (const k of keys) delete out.properties[k];
    if (Array.isArray(out.required)) out.required = out.required.filter((r: string) => !keys.includes(r));
    return out;
  }
  for (const k of keys) delete out[k];
  return out;
}
