import { lazy, Suspense, useEffect, useState } from "react";
import { api, can, currentMe, getWorkspace, restore, setWorkspace, signOut, stream, type Me, type Workspace } from "./api";
import { Link, match, navigate, usePath } from "./router";
import { SignIn } from "./pages/SignIn";
import { FlowList } from "./pages/FlowList";
import { FlowEditor } from "./pages/FlowEditor";
import { RunList } from "./pages/RunList";
import { RunView } from "./pages/RunView";
import { Approvals } from "./pages/Approvals";
import { TaskPage } from "./pages/Task";
import { Triggers } from "./pages/Triggers";
import { BoardList, BoardView } from "./pages/Boards";
import { Users } from "./pages/Users";
import { Tokens } from "./pages/Tokens";
import { Credentials } from "./pages/Credentials";
import { Queues } from "./pages/Queues";
// The analytics page carries the chart library: a chunk of its own.
const BoardAnalytics = lazy(() => import("./pages/BoardAnalytics").then((m) => ({ default: m.BoardAnalytics })));
import { Audit } from "./pages/Audit";
import { Members } from "./pages/Members";
import { Empty, NotFound, Spinner } from "./components/common";

// useMe is the signed-in caller, asked of the server once when the page
// loads (a session cookie or a token from an earlier visit).
export function useMe(): { me: Me | null; known: boolean } {
  const [state, set] = useState(currentMe());
  useEffect(() => {
    const on = () => set(currentMe());
    window.addEventListener("stitchd:auth", on);
    if (!currentMe().known) void restore();
    return () => window.removeEventListener("stitchd:auth", on);
  }, []);
  return state;
}

// useInboxCount is how many approvals the caller sees waiting, live from
// the inbox stream (an "approvals" event with {"count": n} when it starts
// and whenever the inbox may have changed); null until it is known or when
// the server has no stream.
function useInboxCount(me: Me | null): number | null {
  const [count, setCount] = useState<number | null>(null);
  const who = me ? `${me.email}/${me.role}/${me.workspace}` : "";
  useEffect(() => {
    setCount(null);
    if (!who) return;
    return stream(
      "/approvals/stream?assigned=all",
      (e) => {
        const n = (e as unknown as { count?: unknown }).count;
        if (typeof n === "number") setCount(n);
      },
      undefined,
      [403, 404, 405],
    );
  }, [who]);
  return count;
}

// WorkspaceSwitcher chooses the workspace the UI acts in, among those the
// caller belongs to; with only one there is nothing to choose and nothing
// shows. The list is read again on each page the person opens and when
// the window comes back into focus: a workspace an admin has just added
// them to shows without signing in again, and one they were removed from
// goes.
function WorkspaceSwitcher({ me, path }: { me: Me; path: string }) {
  const [spaces, setSpaces] = useState<Workspace[]>([]);
  const [asked, setAsked] = useState(0);
  useEffect(() => {
    const again = () => {
      if (document.visibilityState === "visible") setAsked((n) => n + 1);
    };
    window.addEventListener("focus", again);
    document.addEventListener("visibilitychange", again);
    return () => {
      window.removeEventListener("focus", again);
      document.removeEventListener("visibilitychange", again);
    };
  }, []);
  useEffect(() => {
    let live = true;
    api<{ workspaces: Workspace[] }>("GET", "/workspaces")
      .then((r) => live && setSpaces(r.workspaces))
      // A failed read keeps the list it had: the switcher does not vanish
      // on a passing network error.
      .catch(() => undefined);
    return () => {
      live = false;
    };
  }, [me.email, path, asked]);
  if (spaces.length < 2) return null;
  return (
    <label className="workspace-switch">
      <span className="sr-only">Workspace</span>
      <select
        aria-label="Workspace"
        value={getWorkspace()}
        onChange={(e) => {
          // Another workspace's objects are not there: start at home.
          void setWorkspace(e.target.value).then(() => navigate("/"));
        }}
      >
        {spaces.map((w) => (
          <option key={w.slug} value={w.slug}>
            {w.name}
          </option>
        ))}
      </select>
    </label>
  );
}

// The main navigation, each item with what the role must be able to do.
const NAV: { to: string; label: string; needs: "read" | "approvals" }[] = [
  { to: "/flows", label: "Flows", needs: "read" },
  { to: "/runs", label: "Runs", needs: "read" },
  { to: "/approvals", label: "Approvals", needs: "approvals" },
  { to: "/boards", label: "Boards", needs: "read" },
  { to: "/queues", label: "Queues", needs: "read" },
];

// home is where a person lands: an approver has only the inbox.
function home(me: Me): string {
  return can(me, "read") ? "/flows" : "/approvals";
}

// allowed says whether the role may open a page at all (an approver: the
// inbox, a run they are part of, their tokens).
function allowed(me: Me, path: string): boolean {
  if (path === "/users") return !!(me.server_admin || me.bootstrap);
  if (path === "/audit" || path === "/members") return can(me, "admin");
  if (path === "/credentials") return can(me, "edit");
  if (can(me, "read")) return true;
  return path === "/approvals" || path === "/tokens" || !!match("/runs/:id", path) || !!match("/approvals/:run/:key", path);
}

export function App() {
  const { me, known } = useMe();
  const [path, query] = usePath();
  const [menu, setMenu] = useState(false);
  useEffect(() => setMenu(false), [path]);
  const inbox = useInboxCount(me);

  if (!known) return <Spinner label="Signing in…" />;
  if (!me) return <SignIn />;
  if (path === "/" || path === "/signin") {
    navigate(home(me), true);
    return null;
  }
  let page;
  let m;
  if (!allowed(me, path))
    page = (
      <Empty title="Not for your role">
        <p>
          You are signed in as <strong>{me.role}</strong>, which may not open this page.
        </p>
        <Link to={home(me)}>Go to {home(me) === "/approvals" ? "approvals" : "flows"}</Link>
      </Empty>
    );
  else if (path === "/flows") page = <FlowList />;
  else if (path === "/flows/new") page = <FlowEditor key="new" flowId={null} />;
  else if ((m = match("/flows/:id/triggers", path))) page = <Triggers key={m.id} flowId={m.id} />;
  else if ((m = match("/flows/:id", path))) page = <FlowEditor key={m.id} flowId={m.id} version={query.get("version")} />;
  else if (path === "/runs") page = <RunList flowId={query.get("flow_id")} status={query.get("status")} node={query.get("node")} errorText={query.get("error")} />;
  else if ((m = match("/runs/:id", path))) page = <RunView key={m.id} runId={m.id} focus={query.get("key")} />;
  else if (path === "/approvals") page = <Approvals tab={query.get("assigned")} />;
  else if ((m = match("/approvals/:run/:key", path))) page = <TaskPage key={`${m.run}/${m.key}`} runId={m.run} nodeKey={m.key} />;
  else if (path === "/boards") page = <BoardList />;
  else if ((m = match("/boards/:id/analytics", path))) page = (
      <Suspense fallback={<Spinner label="Loading analytics…" />}>
        <BoardAnalytics key={m.id} boardId={m.id} days={Number(query.get("days")) || 30} />
      </Suspense>
    );
  else if ((m = match("/boards/:id", path))) page = <BoardView key={m.id} boardId={m.id} entityId={query.get("entity")} />;
  else if (path === "/users") page = <Users />;
  else if (path === "/tokens") page = <Tokens />;
  else if (path === "/members") page = <Members />;
  else if (path === "/credentials") page = <Credentials />;
  else if (path === "/queues") page = <Queues />;
  else if (path === "/audit")
    page = <Audit key={query.toString()} actor={query.get("actor") ?? ""} target={query.get("target") ?? ""} since={query.get("since") ?? ""} />;
  else page = <NotFound what="page" back={home(me)} backLabel={`Go to ${home(me) === "/approvals" ? "approvals" : "flows"}`} />;

  const nav = NAV.filter((n) => n.needs === "approvals" || can(me, "read"));
  return (
    <div className="app">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link to={home(me)} className="brand" aria-label="stitchd home">
          <span className="logo" aria-hidden="true" />
          stitchd
        </Link>
        <button
          type="button"
          className="btn ghost menu-toggle"
          aria-expanded={menu}
          aria-controls="nav"
          onClick={() => setMenu(!menu)}
        >
          Menu
        </button>
        <nav id="nav" className={menu ? "open" : ""} aria-label="Main">
          {nav.map((n) => (
            <Link key={n.to} to={n.to} aria-current={path.startsWith(n.to) ? "page" : undefined}>
              {n.label}
              {n.to === "/approvals" && inbox !== null && inbox > 0 && (
                <span className="nav-badge" data-count={inbox} aria-label={`, ${inbox} waiting`} title={`${inbox} ${inbox === 1 ? "approval" : "approvals"} waiting`}>
                  {inbox > 99 ? "99+" : inbox}
                </span>
              )}
            </Link>
          ))}
          <span className="nav-sep" aria-hidden="true" />
          {can(me, "edit") && (
            <Link to="/credentials" aria-current={path === "/credentials" ? "page" : undefined}>
              Credentials
            </Link>
          )}
          {can(me, "admin") && (
            <>
              {(me.server_admin || me.bootstrap) && (
                <Link to="/users" aria-current={path === "/users" ? "page" : undefined}>
                  Users
                </Link>
              )}
              <Link to="/members" aria-current={path === "/members" ? "page" : undefined}>
                Members
              </Link>
              <Link to="/audit" aria-current={path === "/audit" ? "page" : undefined}>
                Audit
              </Link>
            </>
          )}
          {!me.bootstrap && (
            <Link to="/tokens" aria-current={path === "/tokens" ? "page" : undefined}>
              My tokens
            </Link>
          )}
          <WorkspaceSwitcher me={me} path={path} />
          <span className="whoami" data-role={me.role} title={me.name || undefined}>
            <span className="whoami-email">{me.bootstrap ? "admin token" : me.email}</span>
            <span className="role-chip">{me.role}</span>
          </span>
          <button type="button" className="btn ghost" onClick={() => void signOut()}>
            Sign out
          </button>
        </nav>
      </header>
      {/* Keyed by workspace: a switch shows every page afresh. */}
      <main id="main" tabIndex={-1} key={me.workspace ?? "default"}>
        {page}
      </main>
    </div>
  );
}
