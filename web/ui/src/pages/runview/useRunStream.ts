// useRunStream follows a run's events (GET /runs/{id}/events, a
// stream): each new one is kept and has the run read again (throttled,
// more slowly for a large run).
import { useEffect, useRef, useState } from "react";
import { stream, type StreamEvent } from "../../api";
import { useThrottled } from "../../components/common";

export function useRunStream(runId: string, fetchRun: () => Promise<void>, size: number) {
  const [live, setLive] = useState(false);
  const events = useRef<StreamEvent[]>([]);
  const seen = useRef(new Set<number>());
  const [eventCount, setEventCount] = useState(0);
  const refresh = useThrottled(() => void fetchRun(), Math.min(5000, 250 + size / 5));
  const bump = useThrottled(() => setEventCount(events.current.length), 250);
  useEffect(
    () =>
      stream(
        `/runs/${runId}/events`,
        (e) => {
          if (seen.current.has(e.id)) return; // a replay after a reconnect
          seen.current.add(e.id);
          events.current.push(e);
          if (events.current.length > 50000) events.current.splice(0, 10000);
          bump();
          refresh();
        },
        setLive,
      ),
    [runId, refresh, bump],
  );
  return { live, events, eventCount };
}
