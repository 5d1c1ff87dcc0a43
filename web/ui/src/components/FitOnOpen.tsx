import { useReactFlow, useStore } from "@xyflow/react";
import { useEffect, useRef } from "react";
import { fitViewOptions } from "../graph";

type Box = { x: number; y: number; width: number; height: number };

// openingViewport fits a flow's bounds b into a w × h canvas with the
// canvas' fit options (never below a readable zoom on a wide screen):
// centred when it fits, otherwise placed so that where the flow starts —
// its left (and top) edge — is in view, not cut off by centring.
export function openingViewport(b: Box, w: number, h: number): { x: number; y: number; zoom: number } {
  const o = fitViewOptions();
  const want = Math.min(w / (Math.max(b.width, 1) * (1 + o.padding)), h / (Math.max(b.height, 1) * (1 + o.padding)));
  const zoom = Math.min(o.maxZoom, Math.max(o.minZoom, want));
  const margin = 24;
  const place = (start: number, size: number, room: number) =>
    size * zoom <= room - 2 * margin ? (room - size * zoom) / 2 - start * zoom : margin - start * zoom;
  return { x: place(b.x, b.width, w), y: place(b.y, b.height, h), zoom };
}

// useFitFlow returns what fits the canvas' flow as it opens (openingViewport).
export function useFitFlow(): () => boolean {
  const rf = useReactFlow();
  const w = useStore((s) => s.width);
  const h = useStore((s) => s.height);
  return () => {
    const nodes = rf.getNodes();
    if (!nodes.length || !w || !h) return false;
    void rf.setViewport(openingViewport(rf.getNodesBounds(nodes), w, h));
    return true;
  };
}

// FitOnOpen, inside a ReactFlow, fits the view once, when its first nodes
// have been measured: the flow just opened is seen from its start. With
// expect, it waits until the canvas holds that many nodes (Infinity: not
// yet known) — the editor's trigger nodes arrive after the steps, and a
// view fitted without them leaves them out of sight, under the palette.
export function FitOnOpen({ expect = 0 }: { expect?: number }) {
  // Every node measured, as React Flow holds it: not useNodesInitialized,
  // which follows the nodes given — a canvas that does not hand the
  // measured sizes back (the run view, until the run moves) was never
  // fitted, and a flow drawn left of or above 0,0 was out of sight.
  const ready = useStore((s) => {
    if (s.nodeLookup.size === 0) return false;
    for (const n of s.nodeLookup.values()) if (!n.hidden && (!n.measured?.width || !n.measured?.height)) return false;
    return true;
  });
  const fit = useFitFlow();
  const done = useRef(false);
  const count = useStore((s) => s.nodeLookup.size);
  useEffect(() => {
    if (done.current || !ready || !count || count < expect) return;
    done.current = fit();
  }, [ready, count, expect, fit]);
  return null;
}
