import { Cron } from "croner";
import type { Recurrence } from "./model.ts";

/**
 * Occurrence times of a cron expression or a rate, in epoch ms, on whole seconds.
 *
 * Cron evaluation is croner's (no hand-written parser). Its DST rules, which Hourglass documents
 * as its own, are Vixie cron's ("no-wildcard" fixed-time rule):
 * - A fixed-time expression (seconds, minutes and hours without `*`, `?` or a step, such as
 *   `30 2 * * *` or `0 9-17 * * *`) whose local time falls in a DST gap runs once, at the first
 *   valid instant after the gap (02:30 on Berlin's spring-forward day runs at 03:00 CEST); when a
 *   local time occurs twice (fall-back), it runs once, at the first of the two.
 * - Any other expression (a wildcard or a step, such as every 15 minutes) follows the clock: local times that do not exist are
 *   skipped, and a repeated local time runs on both passes, so it keeps its real-time spacing.
 *
 * A rate is a fixed interval in absolute time from its anchor: time zones and DST do not move it.
 */
export interface Evaluator {
  /** The first occurrence strictly after `after`, or undefined when none is left. */
  next(after: number): number | undefined;
  /** Up to `count` occurrences strictly before `before`, newest last. */
  previous(before: number, count: number): number[];
}

const RATE = /^(\d{1,7}) (second|minute|hour|day)s?$/;
const UNIT_MS = { second: 1_000, minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;

/** The interval of a rate expression in ms, or undefined when it is not one. */
export function rateIntervalMs(rate: string): number | undefined {
  const match = RATE.exec(rate.trim());
  if (!match) return undefined;
  const amount = Number(match[1]);
  return amount > 0 ? amount * UNIT_MS[match[2] as keyof typeof UNIT_MS] : undefined;
}

/** True when `zone` is an IANA time zone this runtime knows. */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** Parses a cron expression; throws croner's error (with its reason) when it is not one. */
export function parseCron(expression: string, timezone: string): Cron {
  return new Cron(expression, {
    timezone,
    paused: true,
    mode: "5-or-6-parts",
    fixedTimeRule: "no-wildcard",
  });
}

export function evaluator(recurrence: Recurrence): Evaluator {
  const inside = (t: number) =>
    (recurrence.startAt === undefined || t >= recurrence.startAt) &&
    (recurrence.endAt === undefined || t < recurrence.endAt);
  const base = recurrence.rate !== undefined ? rateEvaluator(recurrence) : cronEvaluator(recurrence);
  return {
    next(after) {
      const from = recurrence.startAt !== undefined ? Math.max(after, recurrence.startAt - 1) : after;
      const t = base.next(from);
      return t !== undefined && inside(t) ? t : undefined;
    },
    previous(before, count) {
      const to = recurrence.endAt !== undefined ? Math.min(before, recurrence.endAt) : before;
      return base.previous(to, count).filter(inside);
    },
  };
}

function cronEvaluator(recurrence: Recurrence): Evaluator {
  const cron = parseCron(recurrence.cron!, recurrence.timezone);
  return {
    next(after) {
      return cron.nextRun(new Date(after))?.getTime() ?? undefined;
    },
    previous(before, count) {
      // croner counts back from a reference it excludes; newest first, so reverse.
      return cron
        .previousRuns(count, new Date(before))
        .map((d) => d.getTime())
        .filter((t) => t < before)
        .reverse();
    },
  };
}

function rateEvaluator(recurrence: Recurrence): Evaluator {
  const interval = rateIntervalMs(recurrence.rate!)!;
  const anchor = recurrence.anchor ?? recurrence.startAt ?? 0;
  return {
    next(after) {
      if (after < anchor) return anchor;
      return anchor + (Math.floor((after - anchor) / interval) + 1) * interval;
    },
    previous(before, count) {
      if (before <= anchor) return [];
      const last = Math.ceil((before - anchor) / interval) - 1;
      const out: number[] = [];
      for (let k = Math.max(0, last - count + 1); k <= last; k++) out.push(anchor + k * interval);
      return out;
    },
  };
}

/** Occurrences in [from, to], at most `cap` of them, oldest first. */
export function between(evaluate: Evaluator, from: number, to: number, cap: number): number[] {
  const out: number[] = [];
  let t = evaluate.next(from - 1);
  while (t !== undefined && t <= to && out.length < cap) {
    out.push(t);
    t = evaluate.next(t);
  }
  return out;
}

/** The local wall time of an instant in a zone, with its UTC offset: `2026-03-29T03:00:00+02:00`. */
export function localIso(t: number, timezone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-US", {
      timeZone: timezone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    })
      .formatToParts(new Date(t))
      .map((p) => [p.type, p.value]),
  ) as Record<string, string>;
  const wall = Date.UTC(
    Number(parts.year),
    Number(parts.month) - 1,
    Number(parts.day),
    Number(parts.hour),
    Number(parts.minute),
    Number(parts.second),
  );
  const offsetMinutes = Math.round((wall - Math.floor(t / 1000) * 1000) / 60_000);
  const sign = offsetMinutes < 0 ? "-" : "+";
  const abs = Math.abs(offsetMinutes);
  const offset = `${sign}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`;
  return `${new Date(wall).toISOString().slice(0, 19)}${offset}`;
}
