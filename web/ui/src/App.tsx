import { useEffect, useState } from "react";
import { getToken, setToken } from "./api";
import { Link, match, navigate, usePath } from "./router";
import { SignIn } from "./pages/SignIn";
import { FlowList } from "./pages/FlowList";
import { FlowEditor } from "./pages/FlowEditor";
import { RunList } from "./pages/RunList";
import { RunView } from "./pages/RunView";
import { Approvals } from "./pages/Approvals";
import { Triggers } from "./pages/Triggers";
import { BoardList, BoardView } from "./pages/Boards";
import { Empty } from "./components/common";

function useToken() {
  const [token, set] = useState(getToken());
  useEffect(() => {
    const on = () => set(getToken());
    window.addEventListener("stitchd:auth", on);
    return () => window.removeEventListener("stitchd:auth", on);
  }, []);
  return token;
}

const NAV = [
  { to: "/flows", label: "Flows" },
  { to: "/runs", label: "Runs" },
  { to: "/approvals", label: "Approvals" },
  { to: "/boards", label: "Boards" },
];

export function App() {
  const token = useToken();
  const [path, query] = usePath();
  const [menu, setMenu] = useState(false);
  useEffect(() => setMenu(false), [path]);

  if (!token) return <SignIn />;
  if (path === "/" || path === "/signin") {
    navigate("/flows", true);
    return null;
  }
  let page;
  let m;
  if (path === "/flows") page = <FlowList />;
  else if (path === "/flows/new") page = <FlowEditor key="new" flowId={null} />;
  else if ((m = match("/flows/:id/triggers", path))) page = <Triggers key={m.id} flowId={m.id} />;
  else if ((m = match("/flows/:id", path))) page = <FlowEditor key={m.id} flowId={m.id} version={query.get("version")} />;
  else if (path === "/runs") page = <RunList flowId={query.get("flow_id")} status={query.get("status")} />;
  else if ((m = match("/runs/:id", path))) page = <RunView key={m.id} runId={m.id} focus={query.get("key")} />;
  else if (path === "/approvals") page = <Approvals />;
  else if (path === "/boards") page = <BoardList />;
  else if ((m = match("/boards/:id", path))) page = <BoardView key={m.id} boardId={m.id} entityId={query.get("entity")} />;
  else
    page = (
      <Empty title="Page not found">
        <Link to="/flows">Go to flows</Link>
      </Empty>
    );

  return (
    <div className="app">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link to="/flows" className="brand" aria-label="stitchd home">
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
          {NAV.map((n) => (
            <Link key={n.to} to={n.to} aria-current={path.startsWith(n.to) ? "page" : undefined}>
              {n.label}
            </Link>
          ))}
          <button type="button" className="btn ghost" onClick={() => setToken(null)}>
            Sign out
          </button>
        </nav>
      </header>
      <main id="main" tabIndex={-1}>
        {page}
      </main>
    </div>
  );
}
