/**
 * Metrics keys: one HASH per tenant and hour, `{prefix:metrics:tenant}:h:<hour>`. They are not part
 * of the time index, so unlike the index keys (see engine/keys.ts) they carry a TTL: 25 hours after
 * their hour began, which keeps a full 24-hour window readable. The hash tag is per tenant, so a
 * tenant's reads and writes touch one slot on Redis Cluster and never anyone else's keys.
 *
 * Fields: `<minute of the hour>|<type>|<series>`, the series being `c` (created), `s` (started),
 * `ok` (succeeded), `f` (failed: retried or dead-lettered), `g` (given back: retried without
 * counting, a dependency was unavailable) or `l<bucket>` (lateness at start).
 */
export const HOUR_MS = 3_600_000;
export const MINUTE_MS = 60_000;
export const RETAIN_MS = 25 * HOUR_MS;

export function metricsKey(prefix: string, tenant: string, hour: number): string {
  return `{${prefix}:metrics:${tenant}}:h:${hour}`;
}

export function hourOf(time: number): number {
  return Math.floor(time / HOUR_MS);
}

export const SERIES = ["created", "started", "succeeded", "failed", "givenBack"] as const;
export type Series = (typeof SERIES)[number];

export const SERIES_CODE: Record<Series, string> = {
  created: "c",
  started: "s",
  succeeded: "ok",
  failed: "f",
  givenBack: "g",
};

export function field(time: number, type: string, code: string): string {
  return `${Math.floor((time % HOUR_MS) / MINUTE_MS)}|${type}|${code}`;
}

/** `minute|type|code` → its parts; types never contain `|` (see EVENT_TYPE). */
export function parseField(raw: string): { minute: number; type: string; code: string } | undefined {
  const first = raw.indexOf("|");
  const last = raw.lastIndexOf("|");
  if (first <= 0 || last === first) return undefined;
  const minute = Number(raw.slice(0, first));
  if (!Number.isInteger(minute) || minute < 0 || minute > 59) return undefined;
  return { minute, type: raw.slice(first + 1, last), code: raw.slice(last + 1) };
}
