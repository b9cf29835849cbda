import type { RedisClient } from "../engine/scripts.ts";
import { addInto, bucketUpperMs, type Histogram, histogramCount, quantileMs } from "./histogram.ts";
import {
  HOUR_MS,
  hourOf,
  MINUTE_MS,
  metricsKey,
  parseField,
  SERIES,
  SERIES_CODE,
  type Series,
} from "./keys.ts";
import { entry } from "./maps.ts";

export const WINDOWS = { "1h": 60, "24h": 1_440 } as const;
export type MetricsWindow = keyof typeof WINDOWS;

export interface LatenessSummary {
  readonly count: number;
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
}

export interface TypeMetrics extends Record<Series, number[]> {
  /** Per minute; null where nothing started that minute. */
  readonly latenessP50Ms: (number | null)[];
  readonly latenessP99Ms: (number | null)[];
  readonly lateness: {
    readonly lastHour: LatenessSummary;
    readonly lastDay: LatenessSummary;
    /** Non-empty buckets over the requested window, in order. */
    readonly histogram: { upToMs: number; count: number }[];
  };
}

export interface TenantMetrics {
  readonly window: MetricsWindow;
  /** Start of the first minute; series index i is the minute starting at from + i minutes. */
  readonly from: number;
  readonly stepSeconds: 60;
  readonly total: TypeMetrics;
  readonly types: Record<string, TypeMetrics>;
}

/** Per type, per minute of the last day: counters and a lateness histogram. */
type Raw = Map<string, Map<number, Cell>>;

type Cell = { counts: Record<string, number>; lateness: Histogram };
const emptyCell = (): Cell => ({ counts: {}, lateness: new Map() });

const CODE_SERIES = new Map(SERIES.map((series) => [SERIES_CODE[series], series]));

/**
 * A tenant's metrics for the last hour or day: 25 hourly hashes read in one pipeline on the
 * tenant's slot. The hour and day summaries are always included, whatever the window, because
 * the dashboard shows both next to the chart.
 */
export async function readMetrics(
  redis: RedisClient,
  prefix: string,
  tenant: string,
  now: number,
  window: MetricsWindow,
): Promise<TenantMetrics> {
  const end = Math.floor(now / MINUTE_MS) * MINUTE_MS + MINUTE_MS;
  const dayStart = end - WINDOWS["24h"] * MINUTE_MS;
  const hourStart = end - WINDOWS["1h"] * MINUTE_MS;
  const from = end - WINDOWS[window] * MINUTE_MS;
  const hours: number[] = [];
  for (let hour = hourOf(dayStart); hour <= hourOf(end - 1); hour++) hours.push(hour);

  const pipeline = redis.pipeline();
  for (const hour of hours) pipeline.hgetall(metricsKey(prefix, tenant, hour));
  const replies = (await pipeline.exec()) ?? [];

  const raw: Raw = new Map();
  replies.forEach(([error, reply], i) => {
    if (error) throw error;
    for (const [name, value] of Object.entries(reply as Record<string, string>)) {
      const parsed = parseField(name);
      if (!parsed) continue;
      const minute = hours[i]! * HOUR_MS + parsed.minute * MINUTE_MS;
      if (minute < dayStart || minute >= end) continue;
      const cell = entry(
        entry(raw, parsed.type, () => new Map()),
        minute,
        emptyCell,
      );
      const count = Number(value);
      if (parsed.code.startsWith("l")) {
        const bucket = Number(parsed.code.slice(1));
        cell.lateness.set(bucket, (cell.lateness.get(bucket) ?? 0) + count);
      } else cell.counts[parsed.code] = (cell.counts[parsed.code] ?? 0) + count;
    }
  });

  const range = { from, minutes: WINDOWS[window], hourStart };
  const types: Record<string, TypeMetrics> = {};
  const everything: Raw = new Map([["", new Map()]]);
  for (const [type, byMinute] of [...raw].sort(([a], [b]) => a.localeCompare(b))) {
    types[type] = summarize(byMinute, range);
    for (const [minute, cell] of byMinute) {
      const all = everything.get("")!;
      const sum = entry(all, minute, emptyCell);
      for (const [code, count] of Object.entries(cell.counts))
        sum.counts[code] = (sum.counts[code] ?? 0) + count;
      addInto(sum.lateness, cell.lateness);
    }
  }
  return { window, from, stepSeconds: 60, total: summarize(everything.get("")!, range), types };
}

function summarize(
  byMinute: Map<number, { counts: Record<string, number>; lateness: Histogram }>,
  range: { from: number; minutes: number; hourStart: number },
): TypeMetrics {
  const series = Object.fromEntries(
    SERIES.map((s) => [s, new Array<number>(range.minutes).fill(0)]),
  ) as Record<Series, number[]>;
  const p50: (number | null)[] = new Array(range.minutes).fill(null);
  const p99: (number | null)[] = new Array(range.minutes).fill(null);
  const day: Histogram = new Map();
  const hour: Histogram = new Map();
  const inWindow: Histogram = new Map();
  for (const [minute, cell] of byMinute) {
    addInto(day, cell.lateness);
    if (minute >= range.hourStart) addInto(hour, cell.lateness);
    const i = (minute - range.from) / MINUTE_MS;
    if (i < 0 || i >= range.minutes) continue;
    addInto(inWindow, cell.lateness);
    for (const [code, count] of Object.entries(cell.counts)) {
      const name = CODE_SERIES.get(code);
      if (name) series[name][i] = count;
    }
    p50[i] = quantileMs(cell.lateness, 0.5) ?? null;
    p99[i] = quantileMs(cell.lateness, 0.99) ?? null;
  }
  return {
    ...series,
    latenessP50Ms: p50,
    latenessP99Ms: p99,
    lateness: {
      lastHour: summary(hour),
      lastDay: summary(day),
      histogram: [...inWindow.keys()]
        .sort((a, b) => a - b)
        .map((bucket) => ({ upToMs: bucketUpperMs(bucket), count: inWindow.get(bucket)! })),
    },
  };
}

function summary(histogram: Histogram): LatenessSummary {
  return {
    count: histogramCount(histogram),
    p50Ms: quantileMs(histogram, 0.5) ?? null,
    p99Ms: quantileMs(histogram, 0.99) ?? null,
  };
}
