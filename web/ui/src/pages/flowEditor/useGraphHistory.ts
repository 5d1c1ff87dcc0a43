// useGraphHistory lets the editor take back its changes to the graph —
// steps added, edited, renamed, moved, connected, deleted, tidied up —
// and make them again: Undo (Ctrl+Z) and Redo (Ctrl+Shift+Z or Ctrl+Y).
// It watches the graph rather than each kind of edit, so no change is left
// out; a burst of changes (a label typed, a node dragged) is one step.
import type { Edge } from "@xyflow/react";
import { useCallback, useEffect, useRef, useState, type Dispatch, type SetStateAction } from "react";
import type { CanvasNode } from "../../graph";

// BURST_MS: changes closer together than this are one step of the history.
export const BURST_MS = 800;
// MAX_STEPS: how far back Undo goes.
export const MAX_STEPS = 100;

// Snap is the graph as the history keeps it: what a save would send and
// where each node stands, without what only the canvas uses.
export interface Snap {
  nodes: CanvasNode[];
  edges: Edge[];
}

const CANVAS_ONLY = new Set(["selected", "measured", "dragging", "resizing", "width", "height"]);

function strip<T extends object>(x: T): T {
  return Object.fromEntries(Object.entries(x).filter(([k]) => !CANVAS_ONLY.has(k))) as T;
}

export function snapshot(nodes: CanvasNode[], edges: Edge[]): Snap {
  return { nodes: nodes.map(strip), edges: edges.map(strip) };
}

// History is the undo and redo stacks over graph states, kept apart from
// React so it can be tested as a value.
export class History {
  private past: Snap[] = [];
  private future: Snap[] = [];
  private current: { snap: Snap; key: string; at: number } | null = null;
  // restoring: the state Undo or Redo put on the canvas, not a change of
  // the person's when it comes back.
  private restoring: string | null = null;

  // reset forgets every step (a flow loaded); the next state seen is the
  // starting point.
  reset() {
    this.past = [];
    this.future = [];
    this.current = null;
    this.restoring = null;
  }

  // seen records the graph's state at time at (ms), as the canvas shows it.
  seen(snap: Snap, at: number) {
    const key = JSON.stringify(snap);
    const cur = this.current;
    if (cur && key === cur.key) return;
    if (this.restoring !== null && key === this.restoring) {
      this.restoring = null;
      this.current = { snap, key, at: -Infinity };
      return;
    }
    this.restoring = null;
    if (!cur) {
      // The starting point: the first change after it begins a step,
      // however soon it comes.
      this.current = { snap, key, at: -Infinity };
      return;
    }
    // A change long after the last begins a step: the state before it can
    // be gone back to. A change within the burst extends the step.
    if (at - cur.at > BURST_MS) {
      this.past.push(cur.snap);
      if (this.past.length > MAX_STEPS) this.past.shift();
    }
    this.future = [];
    this.current = { snap, key, at };
  }

  canUndo() {
    return this.past.length > 0;
  }
  canRedo() {
    return this.future.length > 0;
  }

  // undo answers the state to put back, or null.
  undo(): Snap | null {
    const to = this.past.pop();
    if (!to || !this.current) return null;
    this.future.push(this.current.snap);
    return this.go(to);
  }

  redo(): Snap | null {
    const to = this.future.pop();
    if (!to || !this.current) return null;
    this.past.push(this.current.snap);
    return this.go(to);
  }

  private go(to: Snap): Snap {
    const key = JSON.stringify(to);
    this.restoring = key;
    this.current = { snap: to, key, at: -Infinity };
    return to;
  }
}

// typing says whether a key press goes to a field with an undo of its own.
function typing(t: EventTarget | null): boolean {
  return t instanceof Element && !!t.closest("input, textarea, select, [contenteditable]");
}

export function useGraphHistory({
  nodes,
  edges,
  setNodes,
  setEdges,
  markDirty,
}: {
  nodes: CanvasNode[];
  edges: Edge[];
  setNodes: Dispatch<SetStateAction<CanvasNode[]>>;
  setEdges: Dispatch<SetStateAction<Edge[]>>;
  markDirty: () => void;
}) {
  const history = useRef(new History());
  const [, changed] = useState(0);
  const nodesRef = useRef(nodes);
  nodesRef.current = nodes;

  useEffect(() => {
    const h = history.current;
    const could = [h.canUndo(), h.canRedo()].join();
    h.seen(snapshot(nodes, edges), Date.now());
    if ([h.canUndo(), h.canRedo()].join() !== could) changed((n) => n + 1);
  }, [nodes, edges]);

  // put shows a state of the history, keeping what the canvas knows of
  // each node still there (its selection, its measured size).
  const put = useCallback(
    (s: Snap | null): boolean => {
      if (!s) return false;
      const now = new Map(nodesRef.current.map((n) => [n.id, n]));
      setNodes(s.nodes.map((n) => ({ ...n, selected: now.get(n.id)?.selected ?? false, measured: now.get(n.id)?.measured })));
      setEdges(s.edges);
      markDirty();
      changed((n) => n + 1);
      return true;
    },
    [setNodes, setEdges, markDirty],
  );
  const undo = useCallback(() => put(history.current.undo()), [put]);
  const redo = useCallback(() => put(history.current.redo()), [put]);
  const reset = useCallback(() => {
    history.current.reset();
    changed((n) => n + 1);
  }, []);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      // Not for a field's own undo, nor behind a dialog (Start run, the
      // unsaved-changes question), nor a key taken already.
      if (!(e.ctrlKey || e.metaKey) || e.altKey || e.defaultPrevented || typing(e.target)) return;
      if (document.querySelector('[aria-modal="true"], [role="dialog"], [role="alertdialog"], dialog[open]')) return;
      const k = e.key.toLowerCase();
      let did = false;
      if (k === "z") did = e.shiftKey ? redo() : undo();
      // Cmd+Y is the browser's (History on macOS): Ctrl+Y only.
      else if (k === "y" && e.ctrlKey && !e.shiftKey) did = redo();
      // Nothing to take back: the key is left to the browser.
      if (did) e.preventDefault();
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [undo, redo]);

  return { undo, redo, reset, canUndo: history.current.canUndo(), canRedo: history.current.canRedo() };
}
