// The settings of a Wait node.
import { useRef, useState } from "react";
import { span } from "../../components/common";
import { parseDuration, parseTime } from "../../graph";
import { knownZone, zones } from "./zones";
import { ServerProblems, type PanelProps, type FieldsProps } from "./shared";

// WaitFields edits a Wait node: it waits for a duration, or until a time
// (an RFC 3339 time, or an expression giving one) read in a timezone when
// it has no offset. The server takes one of duration and until.
function WaitFields({
  data,
  onChange,
  problemsAt,
}: Omit<FieldsProps, "nodeId">) {
  const [mode, setMode] = useState<"duration" | "until">(() => (data.until !== undefined && data.duration === undefined ? "until" : "duration"));
  // What was typed in the other mode comes back when you switch back.
  const kept = useRef<Record<string, any>>({});
  const [zoneList] = useState(zones);
  const switchTo = (m: "duration" | "until") => {
    if (m === mode) return;
    const next: Record<string, any> = { ...data };
    const away = m === "duration" ? ["until", "timezone"] : ["duration"];
    for (const k of away) {
      if (next[k] !== undefined) kept.current[k] = next[k];
      delete next[k];
    }
    for (const k of m === "duration" ? ["duration"] : ["until", "timezone"]) if (kept.current[k] !== undefined && next[k] === undefined) next[k] = kept.current[k];
    setMode(m);
    onChange(next);
  };
  const put = (k: string, v: string) => {
    const next = { ...data };
    if (v === "") delete next[k];
    else next[k] = v;
    onChange(next);
  };
  const dur = typeof data.duration === "string" ? data.duration : "";
  const until = typeof data.until === "string" ? data.until : "";
  const tz = typeof data.timezone === "string" ? data.timezone : "";
  const secs = parseDuration(dur);
  const time = parseTime(until);
  const both = data.duration !== undefined && data.until !== undefined;
  return (
    <fieldset className="wait-fields" aria-label="Wait">
      <legend>Wait</legend>
      <div className="tabs" role="radiogroup" aria-label="Wait how">
        <label className={mode === "duration" ? "active" : ""}>
          <input type="radio" name="wait-mode" value="duration" checked={mode === "duration"} onChange={() => switchTo("duration")} /> for a duration
        </label>
        <label className={mode === "until" ? "active" : ""}>
          <input type="radio" name="wait-mode" value="until" checked={mode === "until"} onChange={() => switchTo("until")} /> until a time
        </label>
      </div>
      {both && (
        <p className="field-error" role="alert">
          This step has both a duration and an until time: keep one (switch to the other and back to drop it).
        </p>
      )}
      {mode === "duration" ? (
        <div className="field">
          <label htmlFor="node-duration">Duration</label>
          <input
            id="node-duration"
            className="mono"
            placeholder="48h, 90m, P2D, PT1H30M"
            value={dur}
            aria-invalid={(!!dur.trim() && secs === null) || problemsAt("duration").some((p) => !p.stale)}
            onChange={(e) => put("duration", e.target.value)}
          />
          {!dur.trim() ? (
            <p className="hint">Go (48h, 90m, 1h30m) or ISO-8601 (P2D, PT1H30M). Counted from when the step starts, on the server's clock.</p>
          ) : secs === null ? (
            <p className="field-error" role="alert" data-check="local">
              Not a duration: write 48h, 90m, 1h30m, P2D or PT1H30M.
            </p>
          ) : (
            <p className="hint" data-wait-preview>
              Waits {secs === 0 ? "not at all" : span(secs * 1000)} after the step starts.
            </p>
          )}
          <ServerProblems problems={problemsAt("duration")} id="" />
        </div>
      ) : (
        <>
          <div className="field">
            <label htmlFor="node-until">Until</label>
            <input
              id="node-until"
              className="mono"
              placeholder="2026-12-01T09:00:00+01:00 or input.due_at"
              value={until}
              spellCheck={false}
              aria-invalid={problemsAt("until").some((p) => !p.stale)}
              onChange={(e) => put("until", e.target.value)}
            />
            <p className="hint" data-wait-preview>
              {!until.trim()
                ? "A time (RFC 3339, e.g. 2026-12-01T09:00:00+01:00) or an expression over input, run and entity giving one, e.g. input.due_at."
                : time?.offset
                  ? `Waits until ${time.date.toLocaleString()} (your time).`
                  : time
                    ? `A time without an offset: read in ${tz || "UTC"}.`
                    : "An expression: evaluated when the step starts; it must give a time. A time already past goes on at once."}
            </p>
            <ServerProblems problems={problemsAt("until")} id="" />
          </div>
          <div className="field">
            <label htmlFor="node-timezone">Timezone</label>
            <input
              id="node-timezone"
              list="node-timezones"
              placeholder="UTC"
              value={tz}
              aria-invalid={(!!tz && !knownZone(tz)) || problemsAt("timezone").some((p) => !p.stale)}
              onChange={(e) => put("timezone", e.target.value)}
            />
            <datalist id="node-timezones">
              {zoneList.map((z) => (
                <option key={z} value={z} />
              ))}
            </datalist>
            {tz && !knownZone(tz) ? (
              <p className="field-error" role="alert" data-check="local">
                “{tz}” is not an IANA time zone (Europe/Paris, America/New_York).
              </p>
            ) : (
              <p className="hint">For times without an offset. Empty: UTC.</p>
            )}
            <ServerProblems problems={problemsAt("timezone")} id="" />
          </div>
        </>
      )}
    </fieldset>
  );
}

export function WaitPanel({ data, onChange, problemsAt }: PanelProps) {
  return <WaitFields data={data} onChange={onChange} problemsAt={problemsAt} />;
}
