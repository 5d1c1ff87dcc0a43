import { useRef, useState, type FormEvent } from "react";
import { api, ApiError, describe, type Problem, type Run } from "../../api";
import { TaskForm, type TaskFormHandle } from "../../components/LazyTaskForm";

// Answer shows one button per outcome of a waiting UX node, with an
// optional comment, and the answer: the node's form when it has one, else
// optional JSON (kept in the node's output as decision.answer). The
// server's refusals are shown as it words them: a form's problems next to
// their fields, "not assigned to you", separation of duties, a second
// vote by the same person.
export function Answer({
  runId,
  nodeKey,
  outcomes,
  form = null,
  formOutcomes = null,
  formComment = false,
  onDone,
}: {
  runId: string;
  nodeKey: string;
  outcomes: string[];
  form?: Record<string, any> | null;
  // formOutcomes: the outcomes the form applies to (default: all but reject).
  formOutcomes?: string[] | null;
  // formComment: the form has a comment field, the decision's comment.
  formComment?: boolean;
  // onDone: the step moved on (reload it); refused, when the answer was
  // refused because it had (someone decided it first): the reload takes
  // this card away, so the page shows the refusal instead.
  onDone: (refused?: string) => void;
}) {
  const [comment, setComment] = useState("");
  const [answer, setAnswer] = useState("");
  const [formData, setFormData] = useState<any>(undefined);
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<{ code: string; message: string } | null>(null);
  const [problems, setProblems] = useState<Problem[]>([]);
  const [note, setNote] = useState<string | null>(null);
  const formRef = useRef<TaskFormHandle>(null);
  const id = `${runId}-${nodeKey}`;

  async function choose(outcome: string, _index: number) {
    const body: Record<string, unknown> = { outcome };
    if (!formComment && comment.trim()) body.comment = comment.trim();
    setError(null);
    setNote(null);
    if (form) {
      // The outcomes the form applies to need it filled in (by default
      // all but reject); rejecting does not, and its comment — the form's
      // comment field when it has one — goes along all the same.
      const applies = (formOutcomes ?? outcomes.filter((o) => o !== "reject")).includes(outcome);
      if (applies && formRef.current && !formRef.current.check()) {
        setProblems([]);
        setError({ code: "form_invalid", message: "The answer does not fit the form: see the fields marked above." });
        return;
      }
      body.output = formData ?? null;
    } else {
      const t = answer.trim();
      if (t) {
        try {
          body.output = JSON.parse(t);
        } catch {
          setError({ code: "local", message: 'The answer is not JSON (e.g. {"price": 120}); a note belongs in the comment.' });
          return;
        }
      }
    }
    setBusy(outcome);
    setProblems([]);
    try {
      // The answer is the run: an N-of-M step still waits after a vote
      // that does not decide it.
      const run = await api<Run | undefined>("POST", `/runs/${runId}/nodes/${encodeURIComponent(nodeKey)}/complete`, body);
      if (run?.nodes?.[nodeKey]?.status === "waiting_for_user") setNote(`Your “${outcome}” is counted; the step waits for more people.`);
      onDone();
    } catch (err) {
      const formProblems = err instanceof ApiError ? err.details.filter((p) => p.code === "form_invalid") : [];
      if (formProblems.length) {
        setProblems(formProblems);
        setError({ code: "form_invalid", message: `${err instanceof ApiError ? err.message : "The answer does not fit the form"}: see the fields marked above.` });
      } else if (err instanceof ApiError && err.status === 403 && err.code === "forbidden") {
        setError({ code: "forbidden", message: `Refused: ${err.message.replace(/^forbidden: /, "")}` });
      } else if (err instanceof ApiError && (err.status === 409 || (err.status === 404 && err.code === "not_found"))) {
        // Moved on: decided first by someone else (409), or the run is no
        // longer one this person is part of (reassigned away: 404).
        const why = err.message.replace(/^(invalid transition|conflict|not_found): /, "") || "someone decided this step meanwhile";
        setError({ code: "conflict", message: why });
        onDone(`Your “${outcomeLabel(outcome)}” on ${nodeKey} was not recorded: ${why}`);
      } else setError({ code: err instanceof ApiError ? err.code : "error", message: describe(err) });
    } finally {
      setBusy(null);
    }
  }

  return (
    <form
      className="answer"
      aria-label={`Decide ${nodeKey}`}
      onSubmit={(e: FormEvent) => {
        e.preventDefault();
        void choose(outcomes[0], 0);
      }}
    >
      {form && (
        <TaskForm
          ref={formRef}
          id={id}
          schema={form}
          value={formData}
          onChange={(v) => {
            setFormData(v);
            if (problems.length) setProblems([]);
          }}
          serverProblems={problems}
          disabled={busy !== null}
        />
      )}
      {!formComment && (
        <>
          <label htmlFor={`comment-${id}`}>Comment (optional)</label>
          <textarea id={`comment-${id}`} className="comment" rows={2} value={comment} onChange={(e) => setComment(e.target.value)} />
        </>
      )}
      {!form && (
        <details>
          <summary>Answer with data (optional)</summary>
          <label htmlFor={`answer-${id}`} className="sr-only">
            Answer as JSON
          </label>
          <textarea
            id={`answer-${id}`}
            className="mono"
            rows={3}
            placeholder='{"price": 120}'
            value={answer}
            onChange={(e) => setAnswer(e.target.value)}
            aria-invalid={!!error && error.code === "local"}
          />
        </details>
      )}
      {error && (
        <p className="field-error decide-error" role="alert" data-code={error.code}>
          {error.message}
        </p>
      )}
      {note && (
        <p className="banner ok" role="status">
          {note}
        </p>
      )}
      <div className="outcome-buttons" role="group" aria-label="Outcomes">
        {outcomes.map((o, i) => (
          <button
            key={o}
            type="button"
            data-outcome={o}
            className={`btn ${i === 0 ? "primary" : /^(reject|decline|deny|refuse|no)\b/i.test(o) ? "danger" : ""}`}
            disabled={busy !== null}
            onClick={() => void choose(o, i)}
          >
            {busy === o ? "Sending…" : outcomeLabel(o)}
          </button>
        ))}
      </div>
    </form>
  );
}

export function outcomeLabel(o: string): string {
  return o ? o[0].toUpperCase() + o.slice(1).replace(/_/g, " ") : o;
}
