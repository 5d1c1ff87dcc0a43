import { useRef, useState, type CSSProperties, type PointerEvent as RPointerEvent } from "react";
import { typeInfo, type NodeTypeInfo } from "../../nodetypes";
import { matchTypes, PaletteSearch } from "../../components/PaletteSearch";

// Palette: drag a step onto the canvas with the mouse, touch or pen
// (pointer events), or press it (click, Enter, Space) to add it in the
// middle of the view.
export function Palette({ types, onAdd }: { types: NodeTypeInfo[]; onAdd: (t: string, at: { x: number; y: number } | null) => void }) {
  const [ghost, setGhost] = useState<{ type: string; x: number; y: number } | null>(null);
  const drag = useRef<{ type: string; x: number; y: number; moved: boolean } | null>(null);
  const suppressClick = useRef(false);
  const [query, setQuery] = useState("");
  const shown = matchTypes(types, query);

  const down = (type: string) => (e: RPointerEvent<HTMLButtonElement>) => {
    if (e.button !== 0) return;
    drag.current = { type, x: e.clientX, y: e.clientY, moved: false };
    e.currentTarget.setPointerCapture(e.pointerId);
  };
  const move = (e: RPointerEvent<HTMLButtonElement>) => {
    const d = drag.current;
    if (!d) return;
    if (!d.moved && Math.hypot(e.clientX - d.x, e.clientY - d.y) < 5) return;
    d.moved = true;
    setGhost({ type: d.type, x: e.clientX, y: e.clientY });
  };
  const up = (e: RPointerEvent<HTMLButtonElement>) => {
    const d = drag.current;
    drag.current = null;
    setGhost(null);
    if (!d || !d.moved) return;
    suppressClick.current = true;
    const el = document.elementFromPoint(e.clientX, e.clientY);
    if (el?.closest(".react-flow")) onAdd(d.type, { x: e.clientX, y: e.clientY });
  };

  return (
    <div className="palette" aria-label="Palette">
      <h2>Steps</h2>
      <PaletteSearch value={query} onChange={setQuery} first={shown[0]?.type ?? null} onAdd={(t) => onAdd(t, null)} />
      {query && shown.length === 0 && <p className="muted small" data-palette-none>No step matches “{query}”.</p>}
      {shown.map(({ type: t, label, help, color }) => (
        <button
          key={t}
          type="button"
          className={`palette-item snode-${t.toLowerCase()}`}
          style={color ? ({ "--c": color } as CSSProperties) : undefined}
          data-palette={t}
          onPointerDown={down(t)}
          onPointerMove={move}
          onPointerUp={up}
          onPointerCancel={() => {
            drag.current = null;
            setGhost(null);
          }}
          onClick={() => {
            if (suppressClick.current) {
              suppressClick.current = false;
              return;
            }
            onAdd(t, null);
          }}
          title={help}
          aria-label={`Add ${label} step: ${help}`}
        >
          <strong>{label}</strong>
          <span>{help}</span>
        </button>
      ))}
      {ghost && (
        <div className={`palette-ghost snode-${ghost.type.toLowerCase()}`} style={{ left: ghost.x, top: ghost.y, ...(typeInfo(ghost.type)?.color ? { "--c": typeInfo(ghost.type)!.color } : {}) } as CSSProperties} aria-hidden="true">
          {ghost.type}
        </div>
      )}
    </div>
  );
}
