import { useCallback, useEffect, useRef, useState, type ReactNode } from "react";
import { ApiError, describe, serverNow, type Problem } from "../api";
import { Link } from "../router";

export function Spinner({ label = "Loading…" }: { label?: string }) {
  return (
    <div className="loading" role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" />
      {label}
    </div>
  );
}

export function ErrorBox({ error, onRetry }: { error: unknown; onRetry?: () => void }) {
  if (!error) return null;
  return (
    <div className="error-box" role="alert">
      <span>{describe(error)}</span>
      {onRetry && (
        <button type="button" className="btn small" onClick={onRetry}>
          Try again
        </button>
      )}
    </div>
  );
}

export function Empty({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="empty">
      <h3>{title}</h3>
      {children && <div>{children}</div>}
    </div>
  );
}

// isNotFound says whether an error is the server's 404: the thing asked
// for does not exist (or the id is not one).
export function isNotFound(err: unknown): boolean {
  return err instanceof ApiError && err.status === 404;
}

// NotFound is the page for a link that leads nowhere: what was looked for,
// and ways back.
export function NotFound({ what, id, back, backLabel }: { what: string; id?: string; back: string; backLabel: string }) {
  return (
    <section className="page not-found" data-not-found={what}>
      <Empty title={`${what[0].toUpperCase() + what.slice(1)} not found`}>
        <p>
          {id ? (
            <>
              There is no {what} <span className="mono">{id}</span>.
            </>
          ) : (
            <>
              There is no page at <span className="mono">{location.pathname}</span>.
            </>
          )}{" "}
          The link may be mistyped, or what it led to was deleted.
        </p>
        <p className="not-found-links">
          <Link to={back} className="btn primary">
            {backLabel}
          </Link>
          {history.length > 1 && (
            <button type="button" className="btn" onClick={() => history.back()}>
              Go back
            </button>
          )}
        </p>
      </Empty>
    </section>
  );
}

export function Json({ value, label }: { value: unknown; label?: string }) {
  if (value === undefined || value === null) return <p className="muted">{label ? `No ${label}.` : "—"}</p>;
  return (
    <pre className="json" tabIndex={0} aria-label={label}>
      {JSON.stringify(value, null, 2)}
    </pre>
  );
}

export function Status({ status }: { status: string }) {
  return <span className={`status status-${status}`}>{status.replace(/_/g, " ")}</span>;
}

export function ago(ts: string | null | undefined): string {
  if (!ts) return "—";
  const s = Math.max(0, (Date.now() - new Date(ts).getTime()) / 1000);
  return duration(s) + " ago";
}

export function duration(seconds: number): string {
  if (seconds < 60) return `${Math.round(seconds)}s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)}m`;
  if (seconds < 86400) return `${(seconds / 3600).toFixed(1)}h`;
  return `${(seconds / 86400).toFixed(1)}d`;
}

// span writes a time left (or past) as a countdown does: "45s",
// "12m 5s", "1h 59m", "2d 3h".
export function span(ms: number): string {
  const t = Math.max(0, Math.ceil(ms / 1000));
  const d = Math.floor(t / 86400);
  const h = Math.floor((t % 86400) / 3600);
  const m = Math.floor((t % 3600) / 60);
  const s = t % 60;
  if (d) return h ? `${d}d ${h}h` : `${d}d`;
  if (h) return m ? `${h}h ${m}m` : `${h}h`;
  if (m) return s ? `${m}m ${s}s` : `${m}m`;
  return `${s}s`;
}

// useNow is the current time on the server's clock, ticking every ms
// while mounted.
export function useNow(ms = 1000): number {
  const [now, setNow] = useState(() => serverNow());
  useEffect(() => {
    const t = window.setInterval(() => setNow(serverNow()), ms);
    return () => window.clearInterval(t);
  }, [ms]);
  return now;
}

// Countdown says how long until a time, live: "{before} 1h 59m", then
// `due` once it passed (the server acts on it within a poll or two).
export function Countdown({ at, before, due, className }: { at: string; before: string; due: string; className?: string }) {
  const now = useNow(1000);
  const when = new Date(at).getTime();
  if (isNaN(when)) return null;
  const left = when - now;
  return (
    <span className={className} title={new Date(at).toLocaleString()} data-countdown={at} data-due={left <= 0 ? "true" : undefined}>
      {left > 0 ? `${before} ${span(left)}` : due}
    </span>
  );
}

// useLoad runs a loader and keeps its data, error and loading state;
// reload() runs it again (quietly, keeping the old data on screen).
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]) {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);
  const gen = useRef(0);
  const reload = useCallback(() => {
    const g = ++gen.current;
    load().then(
      (d) => {
        if (g !== gen.current) return;
        setData(d);
        setError(null);
        setLoading(false);
      },
      (e) => {
        if (g !== gen.current) return;
        setError(e);
        setLoading(false);
      },
    );
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);
  useEffect(() => {
    setLoading(true);
    setData(null);
    reload();
  }, [reload]);
  return { data, setData, error, loading, reload };
}

// useThrottled returns a stable function that calls the latest fn at most
// once per ms (trailing), so it can be a dependency without re-running
// effects when ms changes.
export function useThrottled(fn: () => void, ms: number) {
  const timer = useRef<number | null>(null);
  const last = useRef(0);
  const fnRef = useRef(fn);
  const msRef = useRef(ms);
  fnRef.current = fn;
  msRef.current = ms;
  useEffect(() => () => {
    if (timer.current) clearTimeout(timer.current);
  }, []);
  return useCallback(() => {
    if (timer.current) return;
    const wait = Math.max(0, last.current + msRef.current - Date.now());
    timer.current = window.setTimeout(() => {
      timer.current = null;
      last.current = Date.now();
      fnRef.current();
    }, wait);
  }, []);
}

// FOCUSABLE is what Tab stops at in a dialog.
const FOCUSABLE = 'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), summary, [tabindex]:not([tabindex="-1"])';

export function Modal({ title, onClose, children }: { title: string; onClose: () => void; children: ReactNode }) {
  const ref = useRef<HTMLDivElement>(null);
  // The latest onClose, read when Escape is pressed: callers pass a new
  // function at each render, and the focus is taken once, when the dialog
  // opens — not again at each render of the page behind it (a live board
  // re-renders at every move, and focus leapt out of the field typed in).
  const close = useRef(onClose);
  close.current = onClose;
  useEffect(() => {
    const prev = document.activeElement as HTMLElement | null;
    // The first field to fill in, else the first button (Close: never an
    // action a reflexive Enter would take).
    (ref.current?.querySelector<HTMLElement>(".modal-head ~ * :is(textarea, input, select), .modal-head ~ :is(textarea, input, select)") ??
      ref.current?.querySelector<HTMLElement>("button"))?.focus();
    const on = (e: KeyboardEvent) => {
      if (e.key === "Escape") close.current();
      // Tab goes round the dialog's controls, not on to the page behind it.
      if (e.key === "Tab" && ref.current) {
        const all = [...ref.current.querySelectorAll<HTMLElement>(FOCUSABLE)].filter((el) => el.offsetParent !== null || el === document.activeElement);
        if (all.length === 0) return;
        const first = all[0];
        const last = all[all.length - 1];
        const inside = ref.current.contains(document.activeElement);
        if (!inside || (e.shiftKey && document.activeElement === first)) {
          e.preventDefault();
          (e.shiftKey ? last : first).focus();
        } else if (!e.shiftKey && document.activeElement === last) {
          e.preventDefault();
          first.focus();
        }
      }
    };
    window.addEventListener("keydown", on);
    return () => {
      window.removeEventListener("keydown", on);
      prev?.focus();
    };
  }, []);
  return (
    <div className="modal-backdrop" onMouseDown={(e) => e.target === e.currentTarget && onClose()}>
      <div className="modal" role="dialog" aria-modal="true" aria-label={title} ref={ref}>
        <div className="modal-head">
          <h2>{title}</h2>
          <button type="button" className="btn ghost" aria-label="Close" onClick={onClose}>
            ×
          </button>
        </div>
        {children}
      </div>
    </div>
  );
}

// FormErrors shows a form's messages that no field shows (with their
// paths), then the save's error.
export function FormErrors({ other, error }: { other: Problem[]; error: string | null }) {
  return (
    <>
      {other.map((x, i) => (
        <p key={i} className="field-error" role="alert">
          {x.path ? <span className="mono">{x.path}: </span> : null}
          {x.message}
        </p>
      ))}
      {error && (
        <p className="field-error" role="alert" data-form-error>
          {error}
        </p>
      )}
    </>
  );
}

// copyText puts text on the clipboard: with navigator.clipboard where the
// page may use it (HTTPS, localhost), else by copying a selected text box
// (a server opened over plain HTTP by its name or address has no
// navigator.clipboard: Copy did nothing there). false: not copied.
export async function copyText(text: string): Promise<boolean> {
  try {
    if (navigator.clipboard) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    /* refused: try the other way */
  }
  const prev = document.activeElement as HTMLElement | null;
  const box = document.createElement("textarea");
  box.value = text;
  box.setAttribute("readonly", "");
  box.style.position = "fixed";
  box.style.opacity = "0";
  document.body.appendChild(box);
  box.select();
  let ok: boolean;
  try {
    ok = document.execCommand("copy");
  } catch {
    ok = false;
  }
  box.remove();
  prev?.focus();
  return ok;
}
