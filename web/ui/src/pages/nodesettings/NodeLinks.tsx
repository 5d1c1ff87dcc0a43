// A node's outgoing edges (each opens the edge's settings) and a way to
// connect it to another node.
import type { Edge } from "@xyflow/react";
import type { CanvasNode } from "../../graph";
import { edgeKind, edgeLabel } from "../../graph";

export function NodeLinks({
  nodeId,
  outgoing,
  targets,
  target,
  setTarget,
  onConnect,
  onSelectEdge,
}: {
  nodeId: string;
  outgoing: Edge[];
  targets: CanvasNode[];
  target: string;
  setTarget: (v: string) => void;
  onConnect: (target: string) => void;
  onSelectEdge: (id: string) => void;
}) {
  return (
    <>
      {outgoing.length > 0 && (
        <fieldset>
          <legend>Outgoing edges</legend>
          <ul className="edge-list" aria-label={`Edges from ${nodeId}`}>
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
              Connect {nodeId} to
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
  );
}
