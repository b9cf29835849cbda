import type { Bounds, HistoryRecord, MetaRecord, OpRecord } from "../history.ts";
import type { Rule } from "../rules.ts";

/** What every rule in checks/ is given: the history, split once, and how to report. */
export interface CheckContext {
  readonly history: readonly HistoryRecord[];
  readonly ops: readonly OpRecord[];
  /** Faults and unexpected exits: the likely causes, shown in every story. */
  readonly faults: readonly HistoryRecord[];
  readonly meta: MetaRecord | undefined;
  readonly bounds: Bounds | undefined;
  /** When the final reads began (after the quiet period); +∞ for a history cut short. */
  readonly finalAt: number;
  readonly report: (rule: Rule, subject: string, message: string, records: readonly HistoryRecord[]) => void;
}

/** The answer is definite (a status below 500). */
export const definite = (r: OpRecord): boolean => r.status !== undefined && r.status < 500;
/** The request may have taken effect: a definite 2xx, or an answer lost on the way. */
export const mayHaveActed = (r: OpRecord): boolean =>
  r.status === undefined ? r.error !== "refused" : r.status >= 500 || (r.status >= 200 && r.status < 300);

export function field(body: unknown, name: string): unknown {
  return body !== null && typeof body === "object" ? (body as Record<string, unknown>)[name] : undefined;
}

/** About one second of precision is what Hourglass promises (PRODUCT.md, "Why it exists"). */
export const PRECISION_MS = 1_000;

/** The baseline when too few calm samples exist to measure one: the same one second. */
export const DEFAULT_BASELINE_MS = 1_000;

/** A baseline needs this many samples; below it the documented default stands in. */
export const MIN_BASELINE_SAMPLES = 5;

/**
 * True when a fault (or an unexpected exit) may explain a delay of something that could be
 * affected from `from` to `to`: it overlaps that span, its recovery included. A clock skew is a
 * standing condition, not an outage, and excuses nothing.
 */
export function faultNear(ctx: CheckContext, from: number, to: number): boolean {
  const recovery = ctx.bounds?.recoveryMs ?? 12_000;
  return ctx.faults.some((f) => {
    if (f.kind === "fault") return !f.fault.endsWith("-skew") && f.at <= to && f.endAt + recovery >= from;
    if (f.kind === "exit") return !f.expected && f.at <= to && f.at + recovery >= from;
    return false;
  });
}

/** The 99th percentile (the maximum of fewer than 100 values). */
export function p99(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(0.99 * sorted.length))] ?? 0;
}
