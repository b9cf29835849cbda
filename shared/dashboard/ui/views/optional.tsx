import { useState } from "preact/hooks";
import { api, enc, request } from "../api.ts";
import { ErrorNote, Loading } from "../components/bits.tsx";
import { usePoll } from "../poll.ts";
import type { Loose, Stats } from "../types.ts";

/**
 * Schedules and type limits are built elsewhere and may not exist on this server: the page shows
 * them only when their routes answer, and reads their bodies loosely, field by field.
 */
export async function optionalRoutes(): Promise<{ schedules: boolean; limits: boolean }> {
  try {
    // The server's own OpenAPI document says which routes exist, without a request that fails.
    const spec = await api<{ paths?: Record<string, unknown> }>("openapi.json");
    const paths = Object.keys(spec.paths ?? {});
    return {
      schedules: paths.includes("/v1/schedules"),
      limits: paths.some((p) => p.startsWith("/v1/types/") && p.endsWith("/limits")),
    };
  } catch {
    return { schedules: false, limits: false };
  }
}

const text = (value: unknown) =>
  value === undefined || value === null
    ? "–"
    : typeof value === "object"
      ? JSON.stringify(value)
      : String(value);

function listOf(body: unknown, key: string): Loose[] {
  if (Array.isArray(body)) return body as Loose[];
  const inner = (body as Loose | undefined)?.[key] ?? (body as Loose | undefined)?.items;
  return Array.isArray(inner) ? (inner as Loose[]) : [];
}

export function Schedules() {
  const list = usePoll(() => api<unknown>("v1/schedules?limit=100"), 3_000, []);
  const [failure, setFailure] = useState<string | undefined>(undefined);
  const schedules = listOf(list.data, "schedules");
  const toggle = async (schedule: Loose) => {
    const action = schedule.paused ? "resume" : "pause";
    try {
      await api(`v1/schedules/${enc(String(schedule.id))}/${action}`, { method: "POST" });
      setFailure(undefined);
    } catch (error) {
      setFailure(`Could not ${action} ${String(schedule.id)}: ${(error as Error).message}`);
    }
    list.refresh();
  };
  return (
    <>
      <h1 tabIndex={-1}>Schedules</h1>
      {failure && (
        <p class="error" role="alert">
          {failure}
        </p>
      )}
      <ErrorNote error={list.error} what="schedules" />
      {!list.data && !list.error && <Loading what="schedules" />}
      {list.data !== undefined && schedules.length === 0 && <p class="muted">No schedules.</p>}
      {schedules.length > 0 && (
        <table>
          <thead>
            <tr>
              <th scope="col">id</th>
              <th scope="col">when</th>
              <th scope="col">time zone</th>
              <th scope="col">event type</th>
              <th scope="col">state</th>
              <th scope="col">
                <span class="sr-only">actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {schedules.map((s) => (
              <tr key={text(s.id)}>
                <th scope="row" class="mono">
                  {text(s.id)}
                </th>
                <td class="mono">{text(s.cron ?? s.rate)}</td>
                <td>{text(s.timezone)}</td>
                <td>{text((s.event as Loose | undefined)?.type)}</td>
                <td>{s.paused ? "paused" : "active"}</td>
                <td>
                  <button type="button" onClick={() => void toggle(s)}>
                    {s.paused ? "Resume" : "Pause"}
                    <span class="sr-only"> {text(s.id)}</span>
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

export function Limits() {
  const stats = usePoll(() => api<Stats>("v1/stats"), 5_000, []);
  const types = Object.keys(stats.data?.byType ?? {}).sort();
  return (
    <>
      <h1 tabIndex={-1}>Type limits</h1>
      <ErrorNote error={stats.error} what="types" />
      {stats.data && types.length === 0 && <p class="muted">No event types yet.</p>}
      {types.length > 0 && (
        <table>
          <thead>
            <tr>
              <th scope="col">type</th>
              <th scope="col">state</th>
              <th scope="col" class="num">
                rate / s
              </th>
              <th scope="col" class="num">
                burst
              </th>
              <th scope="col" class="num">
                max concurrency
              </th>
              <th scope="col">
                <span class="sr-only">actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {types.map((type) => (
              <LimitRow key={type} type={type} />
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

function LimitRow({ type }: { type: string }) {
  const limits = usePoll(() => request<Loose>(`v1/types/${enc(type)}/limits`), 3_000, [type]);
  const [failure, setFailure] = useState<string | undefined>(undefined);
  const l = limits.data?.body;
  const toggle = async () => {
    if (!limits.data || !l) return;
    const etag = limits.data.headers.get("etag");
    try {
      await request(`v1/types/${enc(type)}/limits`, {
        method: "PUT",
        body: { ...l, paused: !l.paused },
        ...(etag && { headers: { "if-match": etag } }),
      });
      setFailure(undefined);
    } catch (error) {
      setFailure((error as Error).message);
    }
    limits.refresh();
  };
  return (
    <tr>
      <th scope="row">{type}</th>
      <td>{l ? (l.paused ? "paused" : "running") : "…"}</td>
      <td class="num">{text(l?.ratePerSecond)}</td>
      <td class="num">{text(l?.burst)}</td>
      <td class="num">{text(l?.maxConcurrency)}</td>
      <td>
        <button type="button" disabled={!l} onClick={() => void toggle()}>
          {l?.paused ? "Resume" : "Pause"}
          <span class="sr-only"> {type}</span>
        </button>
        <ErrorNote error={limits.error} what="limits" />
        {failure && (
          <p class="error" role="alert">
            {failure}
          </p>
        )}
      </td>
    </tr>
  );
}
