import { useState } from "preact/hooks";
import { OCCURRENCE_ID } from "../../../model/occurrence-pattern.ts";
import { api, enc } from "../api.ts";
import { ErrorNote, Loading, StatusBadge } from "../components/bits.tsx";
import { relative, utc } from "../format.ts";
import { usePoll } from "../poll.ts";
import { type EventPage, type HgEvent, STATUSES } from "../types.ts";

/** The API's id rule, checked here so a typo gets a sentence instead of a request. */
const EVENT_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function navigate(hash: string): void {
  window.location.hash = hash;
}

/** Search by id, and the newest events filtered by status and type, refreshed every 1.5 s. */
export function Events({ query }: { query: URLSearchParams }) {
  const status = query.get("status") ?? "";
  const type = query.get("type") ?? "";
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1];
  const params = new URLSearchParams({ limit: "25" });
  if (status) params.set("status", status);
  if (type) params.set("type", type);
  if (cursor) params.set("cursor", cursor);
  const page = usePoll(() => api<EventPage>(`v1/events?${params}`), 1_500, [status, type, cursor]);

  const filter = (next: { status?: string; type?: string }) => {
    const q = new URLSearchParams();
    const s = next.status ?? status;
    const t = next.type ?? type;
    if (s) q.set("status", s);
    if (t) q.set("type", t);
    setCursors([]);
    navigate(`#/events${q.size ? `?${q}` : ""}`);
  };

  return (
    <>
      <h1 tabIndex={-1}>Events</h1>
      <SearchById />
      <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filter events">
        <label>
          Status
          <select value={status} onChange={(e) => filter({ status: e.currentTarget.value })}>
            <option value="">any</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Type
          <input
            type="text"
            value={type}
            placeholder="any"
            onChange={(e) => filter({ type: e.currentTarget.value.trim() })}
          />
        </label>
      </form>
      <ErrorNote error={page.error} what="events" />
      {!page.data && !page.error && <Loading what="events" />}
      {page.data && <EventTable events={page.data.events} />}
      <nav class="pager" aria-label="Pages of events">
        {cursors.length > 0 && (
          <button type="button" onClick={() => setCursors(cursors.slice(0, -1))}>
            Newer
          </button>
        )}
        {page.data?.cursor && (
          <button type="button" onClick={() => setCursors([...cursors, page.data!.cursor!])}>
            Older
          </button>
        )}
      </nav>
    </>
  );
}

function SearchById() {
  const [text, setText] = useState("");
  const [problem, setProblem] = useState<string | undefined>(undefined);
  return (
    <form
      class="search"
      aria-label="Find an event by id"
      onSubmit={(e) => {
        e.preventDefault();
        const id = text.trim();
        if (!EVENT_ID.test(id) && !OCCURRENCE_ID.test(id)) {
          setProblem(
            id
              ? `"${id.slice(0, 140)}" is not an event id: ids are 1 to 128 letters, digits, dots, underscores, colons or dashes, or a schedule's occurrence id (schedule@instant~revision.incarnation).`
              : "Type an event id to look it up.",
          );
          return;
        }
        setProblem(undefined);
        navigate(`#/events/${enc(id)}`);
      }}
    >
      <label for="search-id">Event id</label>
      <input
        id="search-id"
        type="search"
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
        aria-invalid={problem ? "true" : "false"}
        aria-describedby={problem ? "search-problem" : undefined}
      />
      <button type="submit">Find</button>
      {problem && (
        <p id="search-problem" class="error" role="alert">
          {problem}
        </p>
      )}
    </form>
  );
}

export function EventTable({ events, select }: { events: HgEvent[]; select?: SelectProps }) {
  if (events.length === 0) return <p class="muted">No events match.</p>;
  return (
    <div class="scroll">
      <table data-testid="event-table">
        <thead>
          <tr>
            {select && (
              <th scope="col">
                <input
                  type="checkbox"
                  aria-label="Select all on this page"
                  checked={events.every((e) => select.selected.has(e.id))}
                  onChange={(e) => select.setAll(e.currentTarget.checked ? events.map((ev) => ev.id) : [])}
                />
              </th>
            )}
            <th scope="col">id</th>
            <th scope="col">type</th>
            <th scope="col">status</th>
            <th scope="col">run at</th>
            <th scope="col" class="num">
              attempts
            </th>
            <th scope="col">updated</th>
            {select && <th scope="col">actions</th>}
          </tr>
        </thead>
        <tbody>
          {events.map((event) => (
            <tr key={event.id} data-id={event.id}>
              {select && (
                <td>
                  <input
                    type="checkbox"
                    aria-label={`Select ${event.id}`}
                    checked={select.selected.has(event.id)}
                    onChange={(e) => select.toggle(event.id, e.currentTarget.checked)}
                  />
                </td>
              )}
              <td>
                <a href={`#/events/${enc(event.id)}`} class="mono">
                  {event.id}
                </a>
              </td>
              <td>{event.type}</td>
              <td>
                <StatusBadge status={event.status} />
              </td>
              <td title={utc(event.runAt)}>{relative(event.runAt)}</td>
              <td class="num">
                {event.attempts}/{event.maxAttempts}
              </td>
              <td title={utc(event.updatedAt)}>{relative(event.updatedAt)}</td>
              {select && <td>{select.action(event)}</td>}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export interface SelectProps {
  readonly selected: ReadonlySet<string>;
  toggle(id: string, on: boolean): void;
  setAll(ids: string[]): void;
  action(event: HgEvent): preact.ComponentChildren;
}
