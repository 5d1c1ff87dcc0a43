// ProblemList lists the problems the server found when the flow was last
// saved; each opens its node's or edge's settings.
import type { Problem } from "../../api";
import { PlainProblem } from "../../components/PlainProblem";
import { problemText } from "../../graph";

export function ProblemList({
  problems,
  selectNode,
  selectEdge,
}: {
  problems: (Problem & { stale?: boolean })[];
  selectNode: (id: string) => void;
  selectEdge: (id: string) => void;
}) {
  if (problems.length === 0) return null;
  return (
    <div className="problems" aria-label="Compile problems">
      <h2>Problems ({problems.length})</h2>
      <ul>
        {problems.map((p, i) => (
          <li key={i}>
            {p.node_id ? (
              <button type="button" className="linklike" onClick={() => selectNode(p.node_id!)}>
                {p.node_id}
              </button>
            ) : p.edge_id ? (
              <button type="button" className="linklike mono" onClick={() => selectEdge(p.edge_id!)}>
                {p.edge_id}
              </button>
            ) : null}
            {p.path && <span className="mono muted"> {p.path}</span>} — <PlainProblem message={problemText(p.message, p.edge_id ?? p.node_id ?? "")} />
            {p.stale && <span className="muted"> (edited since)</span>}
          </li>
        ))}
      </ul>
    </div>
  );
}
