import { type Problem } from "../../api";

// The ways a flow may treat a second run for an entity whose run of it is
// still going (settings.entityConcurrency), with what each does.
const CONCURRENCY: { value: string; label: string; help: string }[] = [
  { value: "queue", label: "Queue (default)", help: "The new run waits, queued, and begins by itself when the entity's run before it ends." },
  { value: "skip", label: "Skip", help: "The new run is refused (409 entity_busy; a webhook answers 200 skipped): one run per entity at a time." },
  { value: "allow", label: "Allow", help: "Every run starts at once, beside the entity's runs already going." },
];

// FlowSettings edits the flow's own settings: how runs for one entity
// overlap, the run deadline and how long finished runs are kept. A field
// left empty is not set (the server's default applies).
export function FlowSettings({ settings, problems, onChange }: { settings: Record<string, any>; problems: Problem[]; onChange: (s: Record<string, any>) => void }) {
  const set = (k: string, v: unknown) => {
    const next = { ...settings };
    if (v === undefined || v === "") delete next[k];
    else next[k] = v;
    onChange(next);
  };
  const mode = typeof settings.entityConcurrency === "string" ? settings.entityConcurrency : "queue";
  const num = (k: string) => (settings[k] === undefined ? "" : String(settings[k]));
  const toNum = (v: string) => (v.trim() === "" ? undefined : Number.isFinite(Number(v)) ? Number(v) : v);
  const problem = (path: string) => problems.find((p) => p.path === path)?.message;
  return (
    <section className="flow-settings" aria-label="Flow settings" data-flow-settings>
      <h2>Flow settings</h2>
      <fieldset className="field">
        <legend>A run for an entity that already has a run of this flow going</legend>
        {CONCURRENCY.map((c) => (
          <label key={c.value} className="radio">
            <input type="radio" name="entity-concurrency" value={c.value} checked={mode === c.value} data-concurrency={c.value} onChange={() => set("entityConcurrency", c.value)} />
            <span>
              <strong>{c.label}</strong> <span className="muted small">{c.help}</span>
            </span>
          </label>
        ))}
        {problem("settings.entityConcurrency") && <p className="field-error">{problem("settings.entityConcurrency")}</p>}
      </fieldset>
      <div className="field">
        <label htmlFor="flow-deadline">Run deadline (seconds)</label>
        <input id="flow-deadline" inputMode="numeric" placeholder="none" value={num("deadlineSeconds")} onChange={(e) => set("deadlineSeconds", toNum(e.target.value))} />
        <p className="muted small">A run still going after this long fails. Empty: no deadline.</p>
        {problem("settings.deadlineSeconds") && <p className="field-error">{problem("settings.deadlineSeconds")}</p>}
      </div>
      <div className="field">
        <label htmlFor="flow-retention">Keep finished runs (days)</label>
        <input id="flow-retention" inputMode="numeric" placeholder="server default" value={num("retentionDays")} onChange={(e) => set("retentionDays", toNum(e.target.value))} />
        <p className="muted small">Finished runs older than this are deleted. Empty: the server's --retention.</p>
        {problem("settings.retentionDays") && <p className="field-error">{problem("settings.retentionDays")}</p>}
      </div>
    </section>
  );
}
