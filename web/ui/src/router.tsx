// A small history-API router: the server answers every HTML GET with
// index.html, so deep links and reloads work.
import { useEffect, useState, type AnchorHTMLAttributes, type MouseEvent } from "react";

// A blocker (one at a time: the flow editor with unsaved changes) sees
// every in-app navigation first and may hold it (returning true), to ask
// the person; it navigates later with force.
type Blocker = (to: string) => boolean;
let blocker: Blocker | null = null;
// shown is the address of the page on screen.
let shown = typeof location !== "undefined" ? location.pathname + location.search : "/";

// setBlocker installs a blocker and returns what removes it.
export function setBlocker(b: Blocker): () => void {
  blocker = b;
  return () => {
    if (blocker === b) blocker = null;
  };
}

export function navigate(to: string, replace = false, force = false) {
  if (!force && blocker && to !== location.pathname + location.search && blocker(to)) return;
  if (replace) history.replaceState(null, "", to);
  else history.pushState(null, "", to);
  window.dispatchEvent(new Event("stitchd:navigate"));
}

export function usePath(): [string, URLSearchParams] {
  const [loc, setLoc] = useState(() => location.pathname + location.search);
  useEffect(() => {
    const on = () => setLoc(location.pathname + location.search);
    // Back or Forward to a page a blocker holds: the address goes back to
    // the page shown, and the blocker navigates there if the person agrees.
    const pop = () => {
      const to = location.pathname + location.search;
      if (blocker && to !== shown && blocker(to)) {
        history.pushState(null, "", shown);
        return;
      }
      on();
    };
    window.addEventListener("popstate", pop);
    window.addEventListener("stitchd:navigate", on);
    return () => {
      window.removeEventListener("popstate", pop);
      window.removeEventListener("stitchd:navigate", on);
    };
  }, []);
  shown = loc;
  const u = new URL(loc, location.origin);
  return [u.pathname, u.searchParams];
}

// match returns the named segments of path against a pattern like
// "/runs/:id", or null.
export function match(pattern: string, path: string): Record<string, string> | null {
  const p = pattern.split("/").filter(Boolean);
  const s = path.split("/").filter(Boolean);
  if (p.length !== s.length) return null;
  const out: Record<string, string> = {};
  for (let i = 0; i < p.length; i++) {
    if (p[i].startsWith(":")) out[p[i].slice(1)] = decodeURIComponent(s[i]);
    else if (p[i] !== s[i]) return null;
  }
  return out;
}

export function Link({ to, onClick, ...rest }: AnchorHTMLAttributes<HTMLAnchorElement> & { to: string }) {
  return (
    <a
      href={to}
      onClick={(e: MouseEvent<HTMLAnchorElement>) => {
        onClick?.(e);
        if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(to);
      }}
      {...rest}
    />
  );
}
