// EditorBar is the editor's bar: the flow's name, board, change note and
// version, and its actions (heat map, tidy up, save, start a run, its
// runs and triggers).
import { can, currentMe, describe, download, type BoardListed, type Version } from "../../api";
import { Link, navigate } from "../../router";

export function EditorBar({
  name,
  setName,
  boards,
  boardId,
  setBoardId,
  message,
  setMessage,
  markDirty,
  flowId,
  versions,
  viewing,
  current,
  heatOn,
  setHeatOn,
  setHeatError,
  canTidy,
  tidyUp,
  canUndo,
  undo,
  canRedo,
  redo,
  save,
  saving,
  onStart,
}: {
  name: string;
  setName: (v: string) => void;
  boards: BoardListed[] | null;
  boardId: string;
  setBoardId: (v: string) => void;
  message: string;
  setMessage: (v: string) => void;
  markDirty: () => void;
  flowId: string | null;
  versions: Version[];
  viewing: number | undefined;
  current: number | undefined;
  heatOn: boolean;
  setHeatOn: (v: boolean) => void;
  setHeatError: (v: string | null) => void;
  canTidy: boolean;
  tidyUp: () => void;
  // canUndo, undo, canRedo, redo: the graph's history (useGraphHistory).
  canUndo: boolean;
  undo: () => void;
  canRedo: boolean;
  redo: () => void;
  save: () => Promise<boolean>;
  saving: boolean;
  onStart: () => void;
}) {
  return (
    <div className="editor-bar">
      <div className="field inline">
        <label htmlFor="flow-name">Name</label>
        <input
          id="flow-name"
          value={name}
          onChange={(e) => {
            setName(e.target.value);
            markDirty();
          }}
        />
      </div>
      {boards && (
        <div className="field inline">
          <label htmlFor="flow-board">Board</label>
          <select
            id="flow-board"
            value={boardId}
            onChange={(e) => {
              setBoardId(e.target.value);
              markDirty();
            }}
          >
            <option value="">No board</option>
            {boards.map((b) => (
              <option key={b.id} value={b.id}>
                {b.name}
              </option>
            ))}
          </select>
        </div>
      )}
      <div className="field inline grow">
        <label htmlFor="flow-message">Change note</label>
        <input id="flow-message" placeholder="What changed (optional)" value={message} onChange={(e) => setMessage(e.target.value)} />
      </div>
      {flowId && versions.length > 0 && (
        <div className="field inline">
          <label htmlFor="flow-version">Version</label>
          <select
            id="flow-version"
            value={String(viewing)}
            onChange={(e) => navigate(Number(e.target.value) === current ? `/flows/${flowId}` : `/flows/${flowId}?version=${e.target.value}`)}
          >
            {versions.map((v) => (
              <option key={v.id} value={v.number}>
                v{v.number}
                {v.number === current ? " (latest)" : ""}
                {v.message ? ` — ${v.message}` : ""}
              </option>
            ))}
          </select>
        </div>
      )}
      <div className="bar-actions">
        {flowId && (
          <button
            type="button"
            className={`btn ghost ${heatOn ? "active" : ""}`}
            data-action="heatmap"
            aria-pressed={heatOn}
            onClick={() => {
              setHeatOn(!heatOn);
              setHeatError(null);
            }}
            title="The last 30 days of runs over the canvas: each step's times, failures and waits, each branch's share"
          >
            Heat map
          </button>
        )}
        {heatOn && flowId && (
          <button
            type="button"
            className="btn ghost"
            data-action="heatmap-csv"
            onClick={() => void download(`/flows/${flowId}/analytics?format=csv`, `${name || "flow"}-analytics.csv`).catch((e) => setHeatError(`The export failed: ${describe(e)}`))}
          >
            Export CSV
          </button>
        )}
        <button type="button" className="btn ghost" data-action="tidy" onClick={tidyUp} disabled={!canTidy} title="Lay the steps out left to right">
          Tidy up
        </button>
        <button type="button" className="btn ghost" data-action="undo" onClick={undo} disabled={!canUndo} title="Take back the last change to the steps (Ctrl+Z)" aria-keyshortcuts="Control+Z">
          Undo
        </button>
        <button type="button" className="btn ghost" data-action="redo" onClick={redo} disabled={!canRedo} title="Make the change taken back again (Ctrl+Shift+Z)" aria-keyshortcuts="Control+Shift+Z Control+Y">
          Redo
        </button>
        <button
          type="button"
          className="btn primary"
          onClick={() => void save()}
          disabled={saving || !can(currentMe().me, "edit")}
          title={can(currentMe().me, "edit") ? undefined : `Your role (${currentMe().me?.role}) may not change flows`}
          aria-keyshortcuts="Control+S"
        >
          {saving ? "Saving…" : "Save"}
        </button>
        {flowId && (
          <>
            {can(currentMe().me, "operate") && (
              <button type="button" className="btn" onClick={onStart}>
                Start run
              </button>
            )}
            <Link className="btn ghost" to={`/runs?flow_id=${flowId}`}>
              Runs
            </Link>
            <Link className="btn ghost" to={`/flows/${flowId}/triggers`} data-link="triggers">
              Triggers
            </Link>
          </>
        )}
      </div>
    </div>
  );
}
