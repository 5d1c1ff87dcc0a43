// useFlowDraft is what the editor loads and saves besides the canvas: the
// flow, its name, board and settings, the message of the next version,
// the versions, the last save's problems and notice, whether there are
// unsaved changes; load reads the flow (or one of its versions), save
// sends the graph (also on Ctrl-S).
import type { Edge } from "@xyflow/react";
import { useCallback, useEffect, useRef, useState } from "react";
import { api, ApiError, describe, type BoardListed, type Flow, type Problem, type Version } from "../../api";
import { isNotFound } from "../../components/common";
import { fromCanvas, toCanvas, type CanvasNode } from "../../graph";
import { loadNodeTypes } from "../../nodetypes";
import { navigate } from "../../router";

type BoardSummary = BoardListed;

// KeptDraft is a draft carried to the flow's own address when it changed
// while the save that goes there was on its way (sessionStorage): a new
// flow's first save, or a save of a flow opened at ?version=.
type KeptDraft = { graph: ReturnType<typeof fromCanvas>; name: string; boardId: string; settings: Record<string, any> };

const draftKey = (flowId: string) => `stitchd.draft.${flowId}`;

export function useFlowDraft({
  flowId,
  version,
  nodes,
  edges,
  setNodes,
  setEdges,
  onLoaded,
}: {
  flowId: string | null;
  version?: string | null;
  nodes: CanvasNode[];
  edges: Edge[];
  setNodes: (ns: CanvasNode[]) => void;
  setEdges: (es: Edge[]) => void;
  // onLoaded is told when a flow was loaded (what the canvas remembers of
  // the one before goes).
  onLoaded: () => void;
}) {
  const loaded = useRef(onLoaded);
  loaded.current = onLoaded;
  const [flow, setFlow] = useState<Flow | null>(null);
  const [name, setName] = useState("Untitled flow");
  const [boardId, setBoardId] = useState<string>("");
  const [message, setMessage] = useState("");
  const [versions, setVersions] = useState<Version[]>([]);
  const [boards, setBoards] = useState<BoardSummary[] | null>(null);
  // Problems from the last save; an edge edited since keeps its problems
  // marked stale (shown in its editor, no longer painted on the canvas).
  const [problems, setProblems] = useState<(Problem & { stale?: boolean })[]>([]);
  const [loading, setLoading] = useState(!!flowId);
  const [loadError, setLoadError] = useState<unknown>(null);
  // missingVersion: ?version= names a version the flow does not have.
  const [missingVersion, setMissingVersion] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);
  // A flow just created arrives here under its new URL with its notice.
  const [notice, setNotice] = useState<string | null>(() => {
    const flash = sessionStorage.getItem("stitchd.flash");
    sessionStorage.removeItem("stitchd.flash");
    return flash;
  });
  const [saveError, setSaveError] = useState<string | null>(null);
  const [dirty, setDirty] = useState(false);
  // The flow's settings (graph.settings), saved with the graph.
  const [settings, setSettings] = useState<Record<string, any>>({});
  // heldBack says why the draft cannot be saved as it stands (a node's
  // JSON tab holds text not applied): Save refuses with it, and the draft
  // counts as unsaved.
  const [heldBack, setHeldBack] = useState<string | null>(null);
  // edits counts the changes made (markDirty): a save answered after
  // another change was made leaves the draft unsaved. latest is the draft
  // as it stands now, for a save that answers later than it was sent.
  const edits = useRef(0);
  const latest = useRef({ nodes, edges, name, boardId, settings });
  latest.current = { nodes, edges, name, boardId, settings };

  // Load the flow (or one of its versions) and the boards.
  const load = useCallback(async () => {
    setLoadError(null);
    api<{ boards: BoardSummary[] }>("GET", "/boards").then(
      (b) => setBoards(b.boards ?? []),
      () => setBoards(null),
    );
    if (!flowId) return;
    setLoading(true);
    setMissingVersion(null);
    try {
      // The types first: a graph's types are spelled as registered.
      await loadNodeTypes();
      const f = await api<Flow>("GET", `/flows/${flowId}`);
      const vs = await api<{ versions: Version[] }>("GET", `/flows/${flowId}/versions`);
      let graph = f.graph!;
      if (version && Number(version) !== f.version.number) {
        let v: Version;
        try {
          v = await api<Version>("GET", `/flows/${flowId}/versions/${version}`);
        } catch (err) {
          if (!isNotFound(err)) throw err;
          setMissingVersion(version);
          return;
        }
        graph = v.graph!;
      }
      const c = toCanvas(graph);
      setSettings(graph.settings && typeof graph.settings === "object" ? { ...graph.settings } : {});
      setFlow(f);
      setName(f.name);
      setBoardId(f.board_id ?? "");
      setVersions(vs.versions);
      setNodes(c.nodes);
      setEdges(c.edges);
      setProblems([]);
      setDirty(false);
      loaded.current();
      // A save that brought the editor here answered after more changes
      // were made: they came along, still unsaved.
      const kept = version ? null : sessionStorage.getItem(draftKey(flowId));
      if (kept) {
        sessionStorage.removeItem(draftKey(flowId));
        const d = JSON.parse(kept) as KeptDraft;
        const k = toCanvas(d.graph);
        setNodes(k.nodes);
        setEdges(k.edges);
        setName(d.name);
        setBoardId(d.boardId);
        setSettings(d.settings);
        setDirty(true);
      }
    } catch (err) {
      setLoadError(err);
    } finally {
      setLoading(false);
    }
  }, [flowId, version, setNodes, setEdges]);
  useEffect(() => {
    void load();
  }, [load]);

  const markDirty = useCallback(() => {
    edits.current++;
    setDirty(true);
    setNotice(null);
  }, []);

  const save = useCallback(async (): Promise<boolean> => {
    if (saving) return false;
    if (heldBack) {
      setSaveError(heldBack);
      return false;
    }
    const sent = edits.current;
    setSaving(true);
    setSaveError(null);
    setNotice(null);
    const graph = fromCanvas(nodes, edges);
    if (Object.keys(settings).length) graph.settings = settings;
    const body: Record<string, any> = { name: name.trim() || "Untitled flow", graph, board_id: boardId || null };
    if (message.trim()) body.message = message.trim();
    try {
      const f = flowId ? await api<Flow>("PUT", `/flows/${flowId}`, body) : await api<Flow>("POST", "/flows", body);
      setProblems([]);
      // Changes made while the save was on its way are not in it.
      const since = edits.current !== sent;
      if (!since) setDirty(false);
      setMessage("");
      const changed = !flow || f.version.number !== flow.version.number;
      setFlow(f);
      const after = since ? " Changes made while it was saving are not saved yet." : "";
      setNotice((changed ? `Saved as version ${f.version.number}.` : `No changes to the graph: still version ${f.version.number}.`) + after);
      // Going to the flow's own address loads it again: changes made
      // meanwhile come along (a new flow's, or one opened at ?version=).
      if (since && (!flowId || version)) {
        const now = latest.current;
        const kept: KeptDraft = { graph: fromCanvas(now.nodes, now.edges), name: now.name, boardId: now.boardId, settings: now.settings };
        sessionStorage.setItem(draftKey(f.id), JSON.stringify(kept));
      }
      if (!flowId) {
        sessionStorage.setItem("stitchd.flash", `Created; saved as version ${f.version.number}.${after}`);
        navigate(`/flows/${f.id}`, true, true);
      }
      else {
        const vs = await api<{ versions: Version[] }>("GET", `/flows/${f.id}/versions`);
        setVersions(vs.versions);
        if (version) navigate(`/flows/${f.id}`, true, true);
      }
      return true;
    } catch (err) {
      if (err instanceof ApiError && err.code === "invalid_graph") {
        setProblems(err.details);
        setSaveError(`The flow was not saved: ${err.details.length} problem${err.details.length === 1 ? "" : "s"} to fix.`);
      } else setSaveError(describe(err));
      return false;
    } finally {
      setSaving(false);
    }
  }, [saving, heldBack, nodes, edges, settings, name, boardId, message, flowId, flow, version]);

  useEffect(() => {
    const on = (e: KeyboardEvent) => {
      if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === "s") {
        e.preventDefault();
        void save();
      }
    };
    window.addEventListener("keydown", on);
    return () => window.removeEventListener("keydown", on);
  }, [save]);

  return {
    flow,
    name,
    setName,
    boardId,
    setBoardId,
    message,
    setMessage,
    versions,
    boards,
    problems,
    setProblems,
    loading,
    loadError,
    missingVersion,
    saving,
    notice,
    saveError,
    dirty: dirty || heldBack !== null,
    setHeldBack,
    settings,
    setSettings,
    load,
    markDirty,
    save,
  };
}
