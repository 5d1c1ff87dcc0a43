// The list of flows (GET /api/v1/flows, every page), shared by the views
// that name flows by id: the SubFlow form picks from it, the canvas shows
// the names of the flows SubFlow nodes run.
import { useCallback, useEffect, useMemo, useState } from "react";
import { listAll, type Flow } from "./api";

// FlowSummary: what the flow pickers read of a listed flow.
export type FlowSummary = Pick<Flow, "id" | "name" | "version">;

let cache: FlowSummary[] | null = null;
let lastError: unknown = null;
let pending: Promise<void> | null = null;
const listeners = new Set<() => void>();

function load(): Promise<void> {
  if (pending) return pending;
  pending = listAll<FlowSummary>("/flows?counts=false", "flows")
    .then(
      (fs) => {
        cache = [...fs].sort((a, b) => a.name.localeCompare(b.name));
        lastError = null;
      },
      (err) => {
        lastError = err;
      },
    )
    .finally(() => {
      pending = null;
      listeners.forEach((l) => l());
    });
  return pending;
}

// useFlowList returns the flows as last read (null until read), the error
// of the last read, and reload, which reads them again.
// autoload reads them when nothing was read yet.
export function useFlowList(autoload = true): { flows: FlowSummary[] | null; error: unknown; reload: () => void } {
  const [, setTick] = useState(0);
  useEffect(() => {
    const l = () => setTick((t) => t + 1);
    listeners.add(l);
    if (autoload && !cache && !pending) void load();
    return () => {
      listeners.delete(l);
    };
  }, [autoload]);
  const reload = useCallback(() => void load(), []);
  return { flows: cache, error: lastError, reload };
}

// flowNames maps the ids of the flows read to their names.
// enabled: read them (again) when it turns true.
export function useFlowNames(enabled: boolean): Record<string, string> {
  const { flows, reload } = useFlowList(false);
  useEffect(() => {
    if (enabled) reload();
  }, [enabled, reload]);
  return useMemo(() => {
    const out: Record<string, string> = {};
    for (const f of flows ?? []) out[f.id] = f.name;
    return out;
  }, [flows]);
}
