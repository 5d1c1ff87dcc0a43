// A webhook: each request to POST /hooks/{slug} starts a run. Created,
// edited (entity mapping, input schema, respond; the slug stays), its
// secret rotated and deleted.
import { useEffect, useState, type FormEvent } from "react";
import { api, can, currentMe, describe, type Flow, type RotatedTriggerSecret, type WebhookTrigger } from "../../api";
import { ago, copyText, Countdown, FormErrors, useLoad } from "../../components/common";
import { TaskForm } from "../../components/LazyTaskForm";
import { PlainProblem } from "../../components/PlainProblem";
import { EditButton, TriggerCard, useTriggerAct, useTriggerEdit, type TriggerCardProps } from "./TriggerCard";
import { FormButtons, useTriggerForm } from "./TriggerForm";

export function WebhookCard({ hook, ...props }: { hook: WebhookTrigger } & TriggerCardProps) {
  const { onNotice } = props;
  const act = useTriggerAct(props);
  const [rotating, setRotating] = useState(false);
  // The last rotation's answer: its secret is shown this once (the API
  // never gives it again).
  const [rotated, setRotated] = useState<RotatedTriggerSecret | null>(null);
  const { editing, setEditing, saved } = useTriggerEdit(props);
  const url = `${location.origin}${hook.url}`;
  const required = Array.isArray(hook.input_schema?.required) ? (hook.input_schema!.required as string[]) : [];
  return (
    <TriggerCard
      id={hook.id}
      kind="webhook"
      act={act}
      remove={{ question: `Delete the webhook /hooks/${hook.slug}? Requests to it are refused from now on.`, notice: "Webhook deleted.", lock: false }}
      head={
        <>
          <span className="trigger-kind" aria-hidden="true">
            ⇢
          </span>
          <code data-url>POST {url}</code>
          <span className={`chip ${hook.has_secret ? "chip-ok" : "chip-warn"}`} title={hook.has_secret ? "Requests must be signed with the secret" : "Unsigned: it only creates entities"}>
            {hook.has_secret ? "signed" : "no secret"}
          </span>
        </>
      }
      actions={
        <>
          {can(currentMe().me, "edit") && <EditButton editing={editing} setEditing={setEditing} />}
          {hook.has_secret && (
            <button type="button" className="btn small" data-action="rotate-secret" onClick={() => setRotating(!rotating)} aria-expanded={rotating}>
              Rotate secret
            </button>
          )}
        </>
      }
    >
      <p className="muted small">
        Created {ago(hook.created_at)}
        {hook.entity && Object.keys(hook.entity).length > 0
          ? ` · creates or updates a ${hook.entity.type ?? "entity"} from the body${hook.entity.email_path ? ` (email at ${hook.entity.email_path})` : ""}`
          : " · the request's body becomes the run's input"}
        {hook.input_schema && (
          <span data-input-schema>
            {` · bodies must meet its input schema${required.length ? ` (requires ${required.join(", ")})` : ""}`}
          </span>
        )}
        {hook.respond?.mode === "wait" && <span data-respond-wait={hook.respond.timeout_seconds}>{` · waits up to ${hook.respond.timeout_seconds} s for the run to answer`}</span>}
      </p>
      {editing && (
        <WebhookForm
          flowId={hook.flow_id}
          initial={hook}
          onDone={() => saved(`Webhook saved: the next request to /hooks/${hook.slug} meets its new settings.`)}
          onCancel={() => setEditing(false)}
        />
      )}
      {rotating && (
        <RotateSecretForm
          hook={hook}
          onCancel={() => setRotating(false)}
          onDone={(r) => {
            setRotating(false);
            setRotated(r);
            onNotice(null);
          }}
        />
      )}
      {rotated && <NewSecret r={rotated} onDismiss={() => setRotated(null)} />}
    </TriggerCard>
  );
}

// The grace periods offered for a rotation: how long requests signed
// with the old secret are still accepted (the server allows 0 to 7 days).
const GRACES: [number, string][] = [
  [0, "not at all: the old secret stops now"],
  [3600, "1 hour"],
  [86400, "24 hours (the default)"],
  [3 * 86400, "3 days"],
  [7 * 86400, "7 days"],
];

// RotateSecretForm gives a webhook a new, generated secret (POST
// /triggers/{id}/rotate-secret {grace_seconds}) after saying what that
// does.
function RotateSecretForm({ hook, onDone, onCancel }: { hook: WebhookTrigger; onDone: (r: RotatedTriggerSecret) => void; onCancel: () => void }) {
  const [grace, setGrace] = useState(86400);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const id = `rotate-${hook.id.slice(0, 8)}`;
  async function submit(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      onDone(await api<RotatedTriggerSecret>("POST", `/triggers/${hook.id}/rotate-secret`, { grace_seconds: grace }));
    } catch (err) {
      setError(`Not rotated: ${describe(err)}`);
    } finally {
      setBusy(false);
    }
  }
  return (
    <form className="rotate-form" aria-label={`Rotate the secret of /hooks/${hook.slug}`} onSubmit={submit}>
      <p className="small">
        stitchd generates a new secret and shows it once. Senders must sign with it; requests signed with the current secret are still accepted for the
        time chosen below, while you update them.
      </p>
      <div className="field">
        <label htmlFor={`${id}-grace`}>Keep accepting the old secret for</label>
        <select id={`${id}-grace`} value={grace} onChange={(e) => setGrace(Number(e.target.value))}>
          {GRACES.map(([s, label]) => (
            <option key={s} value={s}>
              {label}
            </option>
          ))}
        </select>
      </div>
      {error && (
        <p className="field-error" role="alert" data-rotate-error>
          {error}
        </p>
      )}
      <FormButtons action="confirm-rotate" label="Rotate secret" busyLabel="Rotating…" busy={busy} onCancel={onCancel} cancelLocked />
    </form>
  );
}

// NewSecret shows a rotation's new secret, this once, and when the old
// one stops being accepted.
function NewSecret({ r, onDismiss }: { r: RotatedTriggerSecret; onDismiss: () => void }) {
  const [copied, setCopied] = useState<"" | "yes" | "no">("");
  const ends = r.previous_secret_expires_at;
  const endsLater = ends && new Date(ends).getTime() > Date.now();
  return (
    <div className="banner ok new-secret" role="status" data-new-secret>
      <p>
        <strong>New secret</strong> — copy it now: it is not shown again.
      </p>
      <div className="secret-row">
        <code className="secret" data-secret>
          {r.secret}
        </code>
        <button
          type="button"
          className="btn small"
          data-action="copy-secret"
          onClick={() => void copyText(r.secret).then((ok) => setCopied(ok ? "yes" : "no"))}
        >
          {copied === "yes" ? "Copied" : "Copy"}
        </button>
      </div>
      {copied === "no" && (
        <p className="field-error" role="alert">
          This browser did not let the page copy it: select the secret and copy it yourself (Ctrl+C or ⌘C).
        </p>
      )}
      <p className="small" data-grace-end={ends ?? ""}>
        {ends && endsLater ? (
          <>
            The old secret is accepted until <strong>{new Date(ends).toLocaleString()}</strong> (
            <Countdown at={ends} before="ends in" due="ended" />
            ).
          </>
        ) : (
          "The old secret is no longer accepted."
        )}
      </p>
      <button type="button" className="btn small ghost" data-action="dismiss-secret" onClick={onDismiss}>
        I have copied it
      </button>
    </div>
  );
}

// WebhookForm creates a webhook (POST /flows/{id}/triggers) or edits one
// (PATCH /triggers/{id}: its slug stays, its secret is rotated apart):
// the entity mapping (board, type, name and email paths), the
// input_schema every request body must meet (JSON, checked as typed, with
// a preview of its form) and whether the hook waits for the run. The
// server's messages are shown under their fields.
export function WebhookForm({ flowId, initial, onDone, onCancel }: { flowId: string; initial?: WebhookTrigger; onDone: (slug: string) => void; onCancel: () => void }) {
  const p = initial ? `hook-${initial.id.slice(0, 8)}` : "hook";
  const [slug, setSlug] = useState(initial?.slug ?? "");
  const [secret, setSecret] = useState("");
  const [wait, setWait] = useState(initial?.respond?.mode === "wait");
  const [waitSeconds, setWaitSeconds] = useState(String(initial?.respond?.timeout_seconds ?? 30));
  const ent = initial?.entity && initial.entity.board_id ? initial.entity : null;
  const [makeEntity, setMakeEntity] = useState(!!ent);
  const [boardId, setBoardId] = useState(ent?.board_id ?? "");
  const [entityType, setEntityType] = useState(ent?.type ?? "");
  const [namePath, setNamePath] = useState(ent?.name_path ?? "");
  const [emailPath, setEmailPath] = useState(ent?.email_path ?? "");
  const [schemaText, setSchemaText] = useState(initial?.input_schema ? JSON.stringify(initial.input_schema, null, 2) : "");
  const [preview, setPreview] = useState<any>(undefined);
  const { problems, setProblems, error, busy, save } = useTriggerForm();
  const boards = useLoad(() => api<{ boards: { id: string; name: string; sections: { id: string; name: string }[] }[] }>("GET", "/boards"), []);
  const flow = useLoad(() => api<Flow>("GET", `/flows/${flowId}`), [flowId]);
  const flowBoard = flow.data?.board_id ?? null;
  // A new mapping starts on the flow's board, the one its entities must be on.
  useEffect(() => {
    if (makeEntity && !boardId && flowBoard) setBoardId(flowBoard);
  }, [makeEntity, boardId, flowBoard]);

  let schema: Record<string, any> | null = null;
  let schemaError: string | null = null;
  if (schemaText.trim()) {
    try {
      const v = JSON.parse(schemaText);
      if (v === null || typeof v !== "object" || Array.isArray(v)) schemaError = 'An input schema is a JSON object (a JSON Schema), e.g. {"type": "object", "required": ["amount"]}.';
      else schema = v;
    } catch (err) {
      schemaError = `Not valid JSON: ${(err as Error).message}`;
    }
  }
  const isSchemaPath = (path?: string) => path === "input_schema" || !!path?.startsWith("input_schema.");
  const schemaProblems = problems.filter((x) => isSchemaPath(x.path));
  const other = problems.filter((x) => !schemaProblems.includes(x));
  const entityMissing = makeEntity && (!boardId || !entityType.trim()) ? "Choose a board and name the entity type." : null;
  const board = boards.data?.boards.find((b) => b.id === boardId);

  async function submit(e: FormEvent) {
    e.preventDefault();
    if (schemaError || entityMissing) return;
    const entity = makeEntity
      ? { board_id: boardId, type: entityType.trim(), ...(namePath.trim() ? { name_path: namePath.trim() } : {}), ...(emailPath.trim() ? { email_path: emailPath.trim() } : {}) }
      : null;
    const respond = wait ? { mode: "wait", timeout_seconds: Number(waitSeconds) } : null;
    const body: Record<string, unknown> = { slug: slug.trim() };
    if (secret) body.secret = secret;
    if (respond) body.respond = respond;
    if (entity) body.entity = entity;
    if (schema) body.input_schema = schema;
    await save(
      () => (initial ? api("PATCH", `/triggers/${initial.id}`, { entity, input_schema: schema, respond }) : api("POST", `/flows/${flowId}/triggers`, body)),
      () => onDone(slug.trim()),
    );
  }
  return (
    <form className="webhook-form" aria-label={initial ? `Edit webhook ${initial.slug}` : "New webhook"} onSubmit={submit} noValidate>
      {initial ? (
        <p className="hint">
          <code>POST /hooks/{initial.slug}</code> keeps its address; its secret is changed with <em>Rotate secret</em>.
        </p>
      ) : (
        <>
          <div className="field">
            <label htmlFor={`${p}-slug`}>Slug</label>
            <input id={`${p}-slug`} className="mono" placeholder="new-lead" value={slug} onChange={(e) => setSlug(e.target.value)} />
            <p className="hint">
              Requests to <code>POST /hooks/{slug.trim() || "…"}</code> start a run with their body as input.
            </p>
          </div>
          <div className="field">
            <label htmlFor={`${p}-secret`}>Secret (optional)</label>
            <input id={`${p}-secret`} type="password" autoComplete="new-password" minLength={16} maxLength={256} value={secret} onChange={(e) => setSecret(e.target.value)} />
            <p className="hint">With a secret (16 to 256 characters), requests must be signed; without one, the hook only creates entities.</p>
          </div>
        </>
      )}
      <fieldset className="hook-entity" data-field="entity">
        <legend>Entity</legend>
        <label className="choice">
          <input id={`${p}-entity`} type="checkbox" checked={makeEntity} onChange={(e) => setMakeEntity(e.target.checked)} /> Create or update an entity from each
          request
        </label>
        {makeEntity && (
          <>
            <div className="row-fields">
              <div className="field">
                <label htmlFor={`${p}-board`}>Board</label>
                <select id={`${p}-board`} value={boardId} onChange={(e) => setBoardId(e.target.value)}>
                  <option value="">— choose a board —</option>
                  {(boards.data?.boards ?? []).map((b) => (
                    <option key={b.id} value={b.id}>
                      {b.name}
                      {b.id === flowBoard ? " (the flow's board)" : ""}
                    </option>
                  ))}
                </select>
                {board && board.sections.length > 0 && (
                  <p className="hint">
                    Sections: {board.sections.map((x) => x.name).join(" → ")}. The flow's steps move the entity between them.
                  </p>
                )}
              </div>
              <div className="field">
                <label htmlFor={`${p}-entity-type`}>Entity type</label>
                <input id={`${p}-entity-type`} placeholder="lead" value={entityType} onChange={(e) => setEntityType(e.target.value)} />
              </div>
            </div>
            <div className="row-fields">
              <div className="field">
                <label htmlFor={`${p}-name-path`}>Name from (path in the body)</label>
                <input id={`${p}-name-path`} className="mono" placeholder="customer.name" value={namePath} onChange={(e) => setNamePath(e.target.value)} />
              </div>
              <div className="field">
                <label htmlFor={`${p}-email-path`}>Email from (path in the body)</label>
                <input id={`${p}-email-path`} className="mono" placeholder="customer.email" value={emailPath} onChange={(e) => setEmailPath(e.target.value)} />
              </div>
            </div>
            <p className="hint">Paths are gjson paths into the request body. A request naming a known email updates that entity (only with a secret).</p>
            {entityMissing && (
              <p className="field-error" role="alert" data-check="local">
                {entityMissing}
              </p>
            )}
          </>
        )}
      </fieldset>
      <div className="field" data-field="input_schema">
        <label htmlFor={`${p}-schema`}>Input schema (JSON Schema, optional)</label>
        <textarea
          id={`${p}-schema`}
          className="mono"
          rows={6}
          spellCheck={false}
          placeholder='{"type": "object", "required": ["amount"], "properties": {"amount": {"type": "number"}}}'
          value={schemaText}
          aria-invalid={!!schemaError || schemaProblems.length > 0}
          onChange={(e) => {
            setSchemaText(e.target.value);
            setProblems((ps) => ps.filter((x) => !isSchemaPath(x.path)));
          }}
        />
        <p className="hint">Every request body must meet it: one that does not is refused (400, each problem listed) and starts no run. Empty: any JSON body.</p>
        {schemaError && (
          <p className="field-error" role="alert" data-check="local" data-schema-error>
            {schemaError}
          </p>
        )}
        {schemaProblems.map((x, i) => (
          <p key={i} className="field-error" role="alert" data-field-error="input_schema">
            <PlainProblem message={x.message} path={x.path} />
          </p>
        ))}
        {schema && !schemaError && (
          <details className="form-preview">
            <summary>Preview</summary>
            <TaskForm id={`${p}-preview`} schema={schema} value={preview} onChange={setPreview} serverProblems={[]} />
          </details>
        )}
      </div>
      <div className="field">
        <label className="choice">
          <input id={`${p}-wait`} type="checkbox" checked={wait} onChange={(e) => setWait(e.target.checked)} /> Wait for the run before answering
        </label>
        {wait && (
          <div className="row">
            <label htmlFor={`${p}-wait-seconds`}>for at most</label>
            <input id={`${p}-wait-seconds`} type="number" min={1} max={60} value={waitSeconds} onChange={(e) => setWaitSeconds(e.target.value)} /> seconds
          </div>
        )}
        <p className="hint">
          {wait
            ? "The request is answered with the run's output (or error) when it ends in time, with a Respond step's answer as soon as one fires, else 202 “running”."
            : "The request is answered 202 with the run's id as soon as the run started."}
        </p>
      </div>
      <FormErrors other={other} error={error} />
      <FormButtons
        action="save-webhook"
        label={initial ? "Save webhook" : "Create webhook"}
        busyLabel={initial ? "Saving…" : "Creating…"}
        busy={busy}
        disabled={(!initial && !slug.trim()) || !!schemaError || !!entityMissing}
        onCancel={onCancel}
      />
    </form>
  );
}
