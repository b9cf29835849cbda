import { useState } from "preact/hooks";
import { ApiError, api, enc } from "../api.ts";
import { ErrorNote, Loading, StatusBadge } from "../components/bits.tsx";
import { Confirm } from "../components/confirm.tsx";
import { relative, utc } from "../format.ts";
import { usePoll } from "../poll.ts";
import type { HgEvent } from "../types.ts";

type Action = "cancel" | "replay";

/** One event, refreshed every 1.5 s, with cancel (not yet started) and replay (dead). */
export function EventDetail({ id }: { id: string }) {
  const event = usePoll(() => api<HgEvent>(`v1/events/${enc(id)}`), 1_500, [id]);
  const [asking, setAsking] = useState<Action | undefined>(undefined);
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | undefined>(undefined);
  const e = event.data;
  const missing = event.error instanceof ApiError && event.error.status === 404;

  const act = async (action: Action) => {
    setAsking(undefined);
    try {
      if (action === "cancel") await api(`v1/events/${enc(id)}`, { method: "DELETE" });
      else await api(`v1/dead-letters/${enc(id)}/replay`, { method: "POST" });
      setOutcome({ ok: true, text: action === "cancel" ? "Cancelled." : "Replayed: it runs again now." });
    } catch (error) {
      setOutcome({ ok: false, text: `Could not ${action}: ${(error as Error).message}` });
    }
    event.refresh();
  };

  return (
    <>
      <p>
        <a href="#/events">← Events</a>
      </p>
      <h1 tabIndex={-1} class="mono">
        {id}
      </h1>
      {missing ? (
        <p class="error" role="alert">
          No event with id “{id}” exists for your tenant.
        </p>
      ) : (
        <ErrorNote error={event.error} what="the event" />
      )}
      {!e && !event.error && <Loading what="the event" />}
      {outcome && (
        <p class={outcome.ok ? "banner" : "error"} role={outcome.ok ? "status" : "alert"}>
          {outcome.text}
        </p>
      )}
      {e && (
        <>
          <dl class="details">
            <dt>status</dt>
            <dd>
              <StatusBadge status={e.status} />
            </dd>
            <dt>type</dt>
            <dd>{e.type}</dd>
            <dt>run at</dt>
            <dd>
              {utc(e.runAt)} ({relative(e.runAt)})
            </dd>
            <dt>attempts</dt>
            <dd>
              {e.attempts} of {e.maxAttempts}
            </dd>
            <dt>created</dt>
            <dd>{utc(e.createdAt)}</dd>
            <dt>last change</dt>
            <dd>
              {utc(e.updatedAt)} ({relative(e.updatedAt)})
            </dd>
          </dl>
          {e.lastError && (
            <>
              <h2>Last error</h2>
              <pre class="error-text">{e.lastError}</pre>
            </>
          )}
          <h2>Payload</h2>
          <pre>{e.payload === undefined ? "(not returned)" : JSON.stringify(e.payload, null, 2)}</pre>
          <div class="actions">
            {(e.status === "scheduled" || e.status === "retrying") && (
              <button type="button" onClick={() => setAsking("cancel")}>
                Cancel event…
              </button>
            )}
            {e.status === "dead" && (
              <button type="button" class="primary" onClick={() => setAsking("replay")}>
                Replay…
              </button>
            )}
          </div>
        </>
      )}
      {asking && (
        <Confirm
          title={asking === "cancel" ? "Cancel this event?" : "Replay this dead letter?"}
          confirmLabel={asking === "cancel" ? "Cancel event" : "Replay"}
          onConfirm={() => void act(asking)}
          onCancel={() => setAsking(undefined)}
        >
          <p>
            {asking === "cancel"
              ? `${id} will never run. This cannot be undone.`
              : `${id} runs again now, with its attempts reset.`}
          </p>
        </Confirm>
      )}
    </>
  );
}
