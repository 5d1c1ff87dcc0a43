// The node types flows may use, from GET /api/v1/node-types, the only
// place the UI learns them: the palette, each node's look (colour, mark),
// help, the id and data of a new node, where entity movement applies and,
// for a type without a panel of its own, its settings form are built from
// this list. Pages that draw a graph wait for it (loadNodeTypes).
import { useEffect, useState } from "react";
import { api, type NodeType } from "./api";

export type NodeTypeInfo = NodeType;

let known: NodeTypeInfo[] | null = null;
let loading: Promise<NodeTypeInfo[]> | null = null;

function current(): NodeTypeInfo[] {
  return known ?? [];
}

// loadNodeTypes asks for the list once (again after a failure, on the
// next page) and resolves with it: empty while it cannot be had.
export function loadNodeTypes(): Promise<NodeTypeInfo[]> {
  loading ??= api<{ types: NodeTypeInfo[] }>("GET", "/node-types", undefined, undefined, { quiet: true })
    .then((r) => (known = r.types))
    .catch(() => {
      loading = null;
      return current();
    });
  return loading;
}

// movesEntity reports whether a type's nodes may move the run's entity
// (its schema has entityMovement).
export function movesEntity(t: NodeTypeInfo | undefined): boolean {
  const props = t?.configSchema.properties;
  return !!props && typeof props === "object" && "entityMovement" in props && !!(props as Record<string, unknown>).entityMovement;
}

// useNodeTypes is the node types: empty until the list came.
export function useNodeTypes(): NodeTypeInfo[] {
  const [types, setTypes] = useState(current);
  useEffect(() => {
    let live = true;
    loadNodeTypes().then((ts) => live && setTypes(ts));
    return () => {
      live = false;
    };
  }, []);
  return types;
}

// typeInfo is what is known of type t (any case), if anything.
export function typeInfo(t: string): NodeTypeInfo | undefined {
  const l = (t ?? "").toLowerCase();
  return current().find((k) => k.type.toLowerCase() === l);
}
