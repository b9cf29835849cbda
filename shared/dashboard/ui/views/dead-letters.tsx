import { useState } from "preact/hooks";
import { api, enc } from "../api.ts";
import { ErrorNote, Loading } from "../components/bits.tsx";
import { Confirm } from "../components/confirm.tsx";
import { usePoll } from "../poll.ts";
import type { EventPage } from "../types.ts";
import { EventTable } from "./events.tsx";

/** Dead letters, newest first: inspect one, or replay one or a selection after a confirmation. */
export function DeadLetters() {
  const page = usePoll(() => api<EventPage>("v1/dead-letters?limit=100"), 2_000, []);
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [asking, setAsking] = useState<string[] | undefined>(undefined);
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | undefined>(undefined);
  const [busy, setBusy] = useState(false);

  const replay = async (ids: string[]) => {
    setAsking(undefined);
    setBusy(true);
    const failed: string[] = [];
    for (const id of ids) {
      try {
        await api(`v1/dead-letters/${enc(id)}/replay`, { method: "POST" });
      } catch (error) {
        failed.push(`${id} (${(error as Error).message})`);
      }
    }
    setBusy(false);
    setSelected(new Set());
    const done = ids.length - failed.length;
    setOutcome(
      failed.length === 0
        ? { ok: true, text: `Replayed ${done} event${done === 1 ? "" : "s"}: they run again now.` }
        : { ok: false, text: `Replayed ${done}; could not replay ${failed.join(", ")}.` },
    );
    page.refresh();
  };

  const events = page.data?.events ?? [];
  return (
    <>
      <h1 tabIndex={-1}>Dead letters</h1>
      <p class="muted">
        Events that exhausted their attempts or failed for good. Replaying runs one again now.
      </p>
      {outcome && (
        <p class={outcome.ok ? "banner" : "error"} role={outcome.ok ? "status" : "alert"}>
          {outcome.text}
        </p>
      )}
      <ErrorNote error={page.error} what="dead letters" />
      {!page.data && !page.error && <Loading what="dead letters" />}
      {page.data && (
        <>
          <div class="actions">
            <button
              type="button"
              class="primary"
              disabled={selected.size === 0 || busy}
              onClick={() => setAsking([...selected])}
            >
              Replay selected ({selected.size})…
            </button>
          </div>
          <EventTable
            events={events}
            select={{
              selected,
              toggle: (id, on) => {
                const next = new Set(selected);
                if (on) next.add(id);
                else next.delete(id);
                setSelected(next);
              },
              setAll: (ids) => setSelected(new Set(ids)),
              action: (event) => (
                <button type="button" disabled={busy} onClick={() => setAsking([event.id])}>
                  Replay<span class="sr-only"> {event.id}</span>…
                </button>
              ),
            }}
          />
        </>
      )}
      {asking && (
        <Confirm
          title={asking.length === 1 ? "Replay this dead letter?" : `Replay ${asking.length} dead letters?`}
          confirmLabel="Replay"
          onConfirm={() => void replay(asking)}
          onCancel={() => setAsking(undefined)}
        >
          <p>They run again now, with their attempts reset:</p>
          <ul class="mono">
            {asking.slice(0, 10).map((id) => (
              <li key={id}>{id}</li>
            ))}
            {asking.length > 10 && <li>and {asking.length - 10} more</li>}
          </ul>
        </Confirm>
      )}
    </>
  );
}
