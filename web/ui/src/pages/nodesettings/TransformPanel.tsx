// The settings of a Transform node: an expression whose value is the
// step's output.
import { useEffect, useRef, useState, type ReactNode } from "react";
import { ExpressionInput } from "../../components/ExpressionInput";
import { ExprPreview } from "../../components/ExprPreview";
import type { Scope } from "../../components/scope";
import { checkExpression } from "./checkExpression";
import { ServerProblems, type PanelProps, type Problems } from "./shared";

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
  problems: Problems;
  nodeId: string;
  scope: Scope;
  children?: ReactNode;
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

export function TransformPanel({ node, data, set, problemsAt, scope, sample, flowId, graph }: PanelProps) {
  return (
    <ExpressionField value={data.expression ?? ""} onChange={set(["expression"])} problems={problemsAt("expression")} nodeId={node.id} scope={scope}>
      <ExprPreview flowId={flowId} nodeId={node.id} text={data.expression ?? ""} sample={sample} graph={graph} />
    </ExpressionField>
  );
}
