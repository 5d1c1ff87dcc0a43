// What an operator may do to one node instance of a run: re-run it,
// complete it by hand, post the event it waits for; and the failures a
// Collector tolerated.
import { useState, type FormEvent } from "react";
import { api, ApiError, describe, type NodeState, type Run } from "../../api";

// refusal is the server's reason for refusing an action, without the
// "conflict: " its 409 messages begin with.
export function refusal(err: unknown): string {
  const msg = describe(err);
  return err instanceof ApiError && err.code === "conflict" ? msg.replace(/^conflict: /, "") : msg;
}

// ToleratedFailures lists the items a Collector with toleratedFailures
// fired without (its output's errors: [{index, key, error}]); each is
// null at its index in the output's items.
export function ToleratedFailures({ errors, total }: { errors: { index?: unknown; key?: unknown; error?: unknown }[]; total: number | null }) {
  return (
    <div className="tolerated" data-tolerated-failures={errors.length}>
      <h3>Tolerated failures</h3>
      <p className="small muted">
        {errors.length} {errors.length === 1 ? "item" : "items"}
        {total !== null ? ` of ${total}` : ""} failed within the tolerance: the Collector fired with null at {errors.length === 1 ? "its index" : "their indexes"}.
      </p>
      <table className="table compact">
        <thead>
          <tr>
            <th scope="col">Index</th>
            <th scope="col">Key</th>
            <th scope="col">Error</th>
          </tr>
        </thead>
        <tbody>
          {errors.slice(0, 500).map((e, i) => (
            <tr key={`${String(e.key)}-${i}`} data-index={String(e.index)}>
              <td>{String(e.index ?? "")}</td>
              <td className="mono">{String(e.key ?? "")}</td>
              <td className="tolerated-error">{String(e.error ?? "")}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {errors.length > 500 && <p className="muted small">…and {errors.length - 500} more (all in the output below).</p>}
    </div>
  );
}

// The finished node statuses a node is re-run from (POST …/rerun).
export const RERUNNABLE = ["completed", "failed", "skipped", "cancelled"];

// Rerun re-runs a finished step and every step after it (POST
// …/nodes/{key}/rerun) as a new attempt, with its input as it was or as
// the person edits it (JSON); a refusal (409) is shown with the server's
// words.
export function Rerun({ runId, state, onDone }: { runId: string; state: NodeState; onDone: () => void }) {
  const original = JSON.stringify(state.input ?? null, null, 2);
  const [open, setOpen] = useState(false);
  const [text, setText] = useState(original);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const parsed = parseOutput(text);
  const changed = parsed.ok && JSON.stringify(parsed.value) !== JSON.stringify(state.input ?? null);
  const id = `rerun-input-${state.key}`;

  async function send(e: FormEvent) {
    e.preventDefault();
    if (!parsed.ok) return;
    setBusy(true);
    setError(null);
    try {
      await api("POST", `/runs/${runId}/nodes/${encodeURIComponent(state.key)}/rerun`, changed ? { input: parsed.value } : {});
      setOpen(false);
      onDone();
    } catch (err) {
      setError(`Not re-run: ${refusal(err)}`);
      onDone();
    } finally {
      setBusy(false);
    }
  }

  if (!open)
    return (
      <div className="node-actions">
        <button
          type="button"
          className="btn"
          data-action="rerun"
          title="Run this step again, and every step after it"
          onClick={() => {
            setText(original);
            setError(null);
            setOpen(true);
          }}
        >
          Re-run from here…
        </button>
        {error && (
          <p className="field-error" role="alert" data-server-error>
            {error}
          </p>
        )}
      </div>
    );
  return (
    <form className="rerun-form" aria-label={`Re-run ${state.key}`} onSubmit={send}>
      <h3>Re-run {state.key} from here</h3>
      <p className="small">
        This resets {state.key} and every step after it, and runs it again as attempt {state.attempt + 1}. What the earlier attempt did stays in the events.
      </p>
      <label htmlFor={id}>Input (JSON)</label>
      <textarea
        id={id}
        className="mono"
        rows={Math.min(12, Math.max(3, original.split("\n").length))}
        spellCheck={false}
        value={text}
        disabled={busy}
        aria-invalid={!parsed.ok}
        aria-describedby={`${id}-help`}
        onChange={(e) => {
          setText(e.target.value);
          setError(null);
        }}
      />
      {parsed.ok ? (
        <p id={`${id}-help`} className="muted small" data-input-note>
          {changed ? "Runs with this input instead of the one it had." : "Runs with the input it had; edit it to run with another."}
        </p>
      ) : (
        <p id={`${id}-help`} className="field-error" role="alert" data-json-error>
          Not valid JSON: {parsed.message}
        </p>
      )}
      {error && (
        <p className="field-error" role="alert" data-server-error>
          {error}
        </p>
      )}
      <div className="row-buttons">
        <button type="submit" className="btn primary" data-action="confirm-rerun" disabled={busy || !parsed.ok}>
          {busy ? "Re-running…" : `Re-run ${state.key}`}
        </button>
        <button type="button" className="btn" disabled={busy} onClick={() => setOpen(false)}>
          Cancel
        </button>
      </div>
    </form>
  );
}

// The node statuses a person can complete by hand (POST …/skip).
export const SKIPPABLE = ["failed", "running", "waiting_for_user", "sleeping", "waiting_for_event"];

// What completing a step by hand does, by the step's status.
const SKIP_EFFECT: Record<string, string> = {
  failed: "marks this failed step completed instead of retrying it",
  running: "marks this step completed now; if its worker answers later, the answer is ignored",
  waiting_for_user: "completes this step without anyone's answer; it leaves the approvals inbox",
  sleeping: "ends this wait now",
  waiting_for_event: "ends this wait for an event now; the event, if it comes later, completes nothing here",
};

// parseOutput reads the optional output a person typed: empty is no
// output (null); anything else must be JSON.
export function parseOutput(text: string): { ok: true; value: unknown } | { ok: false; message: string } {
  const t = text.trim();
  if (!t) return { ok: true, value: null };
  try {
    return { ok: true, value: JSON.parse(t) };
  } catch (err) {
    return { ok: false, message: err instanceof Error ? err.message : String(err) };
  }
}

// CompleteByHand completes a stuck step by hand (POST …/nodes/{key}/skip)
// with an optional JSON output, after the person confirms what it does.
export function CompleteByHand(props: { runId: string; nodeKey: string; status: string; runStatus: Run["status"]; onDone: () => void }) {
  const { runId, nodeKey, status } = props;
  const [open, setOpen] = useState(false);
  const [text, setText] = useState("");
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const parsed = parseOutput(text);
  const id = `skip-output-${nodeKey}`;

  async function send() {
    if (!parsed.ok) return;
    setBusy(true);
    setError(null);
    try {
      await api("POST", `/runs/${runId}/nodes/${encodeURIComponent(nodeKey)}/skip`, parsed.value === null ? {} : { output: parsed.value });
      setOpen(false);
      setConfirming(false);
      props.onDone();
    } catch (err) {
      setError(`Not completed: ${refusal(err)}`);
      setConfirming(false);
    } finally {
      setBusy(false);
    }
  }

  if (!open)
    return (
      <button type="button" className="btn" data-action="complete-by-hand" onClick={() => setOpen(true)}>
        Complete by hand…
      </button>
    );
  return (
    <form
      className="by-hand-form"
      aria-label={`Complete ${nodeKey} by hand`}
      data-step={confirming ? "confirm" : "edit"}
      onSubmit={(e: FormEvent) => {
        e.preventDefault();
        if (confirming) void send();
        else if (parsed.ok) setConfirming(true);
      }}
    >
      <h3>Complete {nodeKey} by hand</h3>
      <p className="small">
        This {SKIP_EFFECT[status] ?? "completes this step"}, and the run goes on to the next steps with the output below as this step's output.
        {props.runStatus === "paused" ? " The run is paused: the next steps start when it is resumed." : ""}
      </p>
      <label htmlFor={id}>Output (JSON, optional)</label>
      <textarea
        id={id}
        className="mono"
        rows={4}
        autoFocus
        placeholder='{"fixed": true}'
        value={text}
        disabled={confirming || busy}
        aria-invalid={!parsed.ok}
        aria-describedby={`${id}-help`}
        onChange={(e) => {
          setText(e.target.value);
          setError(null);
        }}
      />
      {parsed.ok ? (
        <p id={`${id}-help`} className="muted small">
          {text.trim() ? "Valid JSON." : "Left empty, the step's output is null."}
        </p>
      ) : (
        <p id={`${id}-help`} className="field-error" role="alert" data-json-error>
          Not valid JSON: {parsed.message}
        </p>
      )}
      {error && (
        <p className="field-error" role="alert" data-server-error>
          {error}
        </p>
      )}
      {confirming ? (
        <div className="confirm" role="group" aria-label="Confirm">
          <p>
            <strong>
              Complete {nodeKey} by hand with {parsed.ok && parsed.value !== null ? "this output" : "no output"}?
            </strong>{" "}
            This cannot be undone; it is recorded as done by you.
          </p>
          {parsed.ok && parsed.value !== null && <pre className="json">{JSON.stringify(parsed.value, null, 2)}</pre>}
          <div className="row-buttons">
            <button type="submit" className="btn primary" data-action="confirm-complete" disabled={busy} autoFocus>
              {busy ? "Completing…" : `Yes, complete ${nodeKey}`}
            </button>
            <button type="button" className="btn" disabled={busy} onClick={() => setConfirming(false)}>
              Back
            </button>
          </div>
        </div>
      ) : (
        <div className="row-buttons">
          <button type="submit" className="btn primary" data-action="review-complete" disabled={!parsed.ok}>
            Complete by hand…
          </button>
          <button
            type="button"
            className="btn"
            onClick={() => {
              setOpen(false);
              setError(null);
            }}
          >
            Cancel
          </button>
        </div>
      )}
    </form>
  );
}

// PostEvent posts the event a waiting Event step waits for (POST
// /api/v1/events): its name and key, filled in, and an optional JSON
// payload, which becomes the step's output.
export function PostEvent({ name: initialName, eventKey, onDone }: { name: string; eventKey: string; onDone: () => void }) {
  const [name, setName] = useState(initialName);
  const [key, setKey] = useState(eventKey);
  const [text, setText] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [result, setResult] = useState<{ delivered: number; duplicate: boolean; kept: boolean } | null>(null);
  const parsed = parseOutput(text);

  async function send() {
    if (!parsed.ok || !name.trim() || !key) return;
    setBusy(true);
    setError(null);
    setResult(null);
    try {
      const body: Record<string, unknown> = { name: name.trim(), key };
      if (parsed.value !== null) body.payload = parsed.value;
      const r = await api<{ id: string; delivered: number; duplicate: boolean; kept: boolean }>("POST", "/events", body);
      setResult(r);
      onDone();
    } catch (err) {
      setError(`Not posted: ${describe(err)}`);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form
      className="post-event"
      aria-label="Post this event"
      onSubmit={(e: FormEvent) => {
        e.preventDefault();
        void send();
      }}
    >
      <h3>Post this event</h3>
      <p className="small muted">Sends the event this step waits for, as your system would with POST /api/v1/events. Every step waiting on this name and key completes with the payload.</p>
      <div className="row">
        <label htmlFor="event-name" className="sr-only">
          Event name
        </label>
        <input id="event-name" className="mono" value={name} onChange={(e) => setName(e.target.value)} aria-label="Event name" />
        <label htmlFor="event-key" className="sr-only">
          Key
        </label>
        <input id="event-key" className="mono" value={key} onChange={(e) => setKey(e.target.value)} aria-label="Key" />
      </div>
      <label htmlFor="event-payload">Payload (JSON, optional)</label>
      <textarea
        id="event-payload"
        className="mono"
        rows={3}
        placeholder='{"amount": 120}'
        value={text}
        aria-invalid={!parsed.ok}
        onChange={(e) => {
          setText(e.target.value);
          setResult(null);
        }}
      />
      {!parsed.ok && (
        <p className="field-error" role="alert" data-json-error>
          Not valid JSON: {parsed.message}
        </p>
      )}
      {error && (
        <p className="field-error" role="alert" data-server-error>
          {error}
        </p>
      )}
      {result && (
        <p className="banner ok" role="status" data-event-result={result.delivered}>
          {result.duplicate
            ? "Already posted (same id): nothing delivered twice."
            : result.delivered
              ? `Delivered to ${result.delivered} waiting step${result.delivered === 1 ? "" : "s"}.`
              : "No step was waiting on it: kept for the first wait on this name and key."}
        </p>
      )}
      <button type="submit" className="btn primary" data-action="post-event" disabled={busy || !parsed.ok || !name.trim() || !key}>
        {busy ? "Posting…" : "Post event"}
      </button>
    </form>
  );
}

// useRunLabel reads a run and its flow's name, to name it for a person;
