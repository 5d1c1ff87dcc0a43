// useHeat is the editor's heat map: the last 30 days' figures of each
// node over the canvas (GET /flows/{id}/analytics), and how often each
// branch was taken; read once it is turned on.
import { useEffect, useMemo, useState } from "react";
import { api, describe, type FlowAnalytics } from "../../api";

export function useHeat(flowId: string | null) {
  const [heatOn, setHeatOn] = useState(false);
  const [heat, setHeat] = useState<FlowAnalytics | null>(null);
  const [heatError, setHeatError] = useState<string | null>(null);
  useEffect(() => {
    if (!heatOn || !flowId) return;
    let live = true;
    api<FlowAnalytics>("GET", `/flows/${flowId}/analytics`)
      .then((a) => live && setHeat(a))
      .catch((e) => live && setHeatError(describe(e)));
    return () => {
      live = false;
    };
  }, [heatOn, flowId]);
  const heatOf = useMemo(() => {
    const out: Record<string, FlowAnalytics["nodes"][number]> = {};
    if (heatOn && heat) for (const n of heat.nodes) out[n.key] = n;
    return out;
  }, [heatOn, heat]);
  return { heatOn, setHeatOn, heat, heatError, setHeatError, heatOf };
}
