import { useEffect, useState, type FormEvent } from "react";
import { api, describe, stream, type Approval } from "../api";
import { ago, Empty, ErrorBox, Json, Spinner, useLoad, useThrottled } from "../components/common";
import { Link } from "../router";

// Approvals lists every node waiting for a person, live.
export function Approvals() {
  const { data, error, loading, reload } = useLoad(() => api<{ approvals: Approval[] }>("GET", "/approvals"), []);
  const refresh = useThrottled(reload, 300);
  useEffect(
    () =>
      stream("/events", (e) => {
        if (e.type === "node.status" || e.type.startsWith("run.")) refresh();
      }),
    [refresh],
  );
  return (
    <section className="page">
      <div className="page-head">
        <h1>Approvals</h1>
        {data && <span className="muted">{data.approvals.length} waiting</span>}
      </div>
      <ErrorBox error={error} onRetry={reload} />
      {loading && <Spinner label="Loading approvals…" />}
      {data && data.approvals.length === 0 && (
        <Empty title="Nothing is waiting for you">
          <p>When a run reaches an approval step, it appears here at once.</p>
        </Empty>
      )}
      <ul className="approvals">
        {data?.approvals.map((a) => (
          <li key={`${a.run_id}/${a.key}`} className="card approval" data-approval={`${a.run_id}/${a.key}`}>
            <div className="approval-head">
              <h2>{a.label || a.node_id}</h2>
              <span className="muted" title={a.waiting_since}>
                waiting {ago(a.waiting_since).replace(" ago", "")}
              </span>
            </div>
            {a.prompt && <p className="prompt">{a.prompt}</p>}
            <p className="muted small">
              <Link to={`/runs/${a.run_id}`}>Run {a.run_id.slice(0, 8)}</Link> · step <span className="mono">{a.key}</span>
              {a.entity && (
                <>
                  {" "}
                  · for{" "}
                  <Link to={`/boards/${a.entity.board_id}?entity=${a.entity.id}`}>
                    <strong>{a.entity.name || a.entity.id.slice(0, 8)}</strong>
                  </Link>
                  {a.entity.email ? ` (${a.entity.email})` : ""}
                </>
              )}
            </p>
            <details>
              <summary>Input</summary>
              <Json value={a.input} label="input" />
            </details>
            <Answer runId={a.run_id} nodeKey={a.key} onDone={reload} />
          </li>
        ))}
      </ul>
    </section>
  );
}

// Answer approves a waiting node with an optional answer, or rejects it
// with a reason. An answer that is JSON is sent as is; plain text is sent
// as {"approved": true, "answer": text}.
export function Answer({ runId, nodeKey, onDone }: { runId: string; nodeKey: string; onDone: () => void }) {
  const [text, setText] = useState("");
  const [reason, setReason] = useState("");
  const [mode, setMode] = useState<"approve" | "reject">("approve");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const id = `${runId}-${nodeKey}`;

  async function submit(e: FormEvent) {
    e.preventDefault();
    let body: Record<string, unknown>;
    if (mode === "reject") {
      if (!reason.trim()) {
        setError("Say why you reject it: the reason is kept with the run.");
        return;
      }
      body = { status: "failed", error: reason.trim() };
    } else {
      let output: unknown = { approved: true };
      const t = text.trim();
      if (t) {
        try {
          output = JSON.parse(t);
        } catch {
          output = { approved: true, answer: t };
        }
      }
      body = { status: "completed", output };
    }
    setBusy(true);
    setError(null);
    try {
      await api("POST", `/runs/${runId}/nodes/${encodeURIComponent(nodeKey)}/complete`, body);
      onDone();
    } catch (err) {
      setError(describe(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <form className="answer" onSubmit={submit}>
      <div className="tabs" role="radiogroup" aria-label="Decision">
        <label className={mode === "approve" ? "active" : ""}>
          <input type="radio" name={`mode-${id}`} checked={mode === "approve"} onChange={() => setMode("approve")} /> Approve
        </label>
        <label className={mode === "reject" ? "active" : ""}>
          <input type="radio" name={`mode-${id}`} checked={mode === "reject"} onChange={() => setMode("reject")} /> Reject
        </label>
      </div>
      {mode === "approve" ? (
        <>
          <label htmlFor={`answer-${id}`}>Answer (optional: text or JSON)</label>
          <textarea id={`answer-${id}`} rows={2} value={text} onChange={(e) => setText(e.target.value)} />
        </>
      ) : (
        <>
          <label htmlFor={`reason-${id}`}>Reason</label>
          <textarea id={`reason-${id}`} rows={2} value={reason} onChange={(e) => setReason(e.target.value)} aria-invalid={!!error} />
        </>
      )}
      {error && (
        <p className="field-error" role="alert">
          {error}
        </p>
      )}
      <button type="submit" className={`btn ${mode === "approve" ? "primary" : "danger"}`} disabled={busy}>
        {busy ? "Sending…" : mode === "approve" ? "Approve" : "Reject"}
      </button>
    </form>
  );
}
