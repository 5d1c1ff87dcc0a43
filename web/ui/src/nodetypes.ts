// The node types flows may use, from GET /api/v1/node-types: the palette,
// each node's look and, for a type without a panel of its own, its settings
// form are built from this list. Until it arrives (and should it fail) the
// built-in types are known from graph.ts.
import { useEffect, useState } from "react";
import { api } from "./api";
import { NODE_TYPES, TYPE_HELP } from "./graph";

export interface NodeTypeInfo {
  type: string;
  label: string;
  help: string;
  color: string;
  icon: string;
  defaultConfig: Record<string, any>;
  configSchema: Record<string, any>;
  statuses: string[];
  panel: boolean;
  builtin: boolean;
}

// STARTING_DATA is a new built-in node's data (as the server's list has it).
const STARTING_DATA: Record<string, Record<string, any>> = {
  Worker: { webhookUrl: "" },
  UX: { prompt: "" },
  Splitter: { arrayPath: "" },
  HTTP: { method: "GET", url: "" },
  Event: { event: "", key: "" },
  SubFlow: { flow: "" },
};

// builtin is the fallback list (made when first asked for: graph.ts, which
// this module imports, imports typeInfo from it).
function builtin(): NodeTypeInfo[] {
  return NODE_TYPES.map((t) => ({
    type: t,
    label: t,
    help: TYPE_HELP[t],
    color: "",
    icon: "",
    defaultConfig: { ...(STARTING_DATA[t] ?? {}) },
    configSchema: { type: "object" },
    statuses: [],
    panel: true,
    builtin: true,
  }));
}

let known: NodeTypeInfo[] | null = null;
let loading: Promise<NodeTypeInfo[]> | null = null;

function current(): NodeTypeInfo[] {
  return (known ??= builtin());
}

function load(): Promise<NodeTypeInfo[]> {
  loading ??= api<{ types: NodeTypeInfo[] }>("GET", "/node-types", undefined, undefined, { quiet: true })
    .then((r) => (known = r.types))
    .catch(() => {
      loading = null; // asked again on the next page
      return current();
    });
  return loading;
}

// useNodeTypes is the node types, the built-in ones until the list came.
export function useNodeTypes(): NodeTypeInfo[] {
  const [types, setTypes] = useState(current);
  useEffect(() => {
    let live = true;
    load().then((ts) => live && setTypes(ts));
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
