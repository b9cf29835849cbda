import type { FieldIssue } from "../errors.ts";
import { fieldIssues, fingerprintOf } from "../events/validate.ts";
import type { HandlerRegistry } from "../handlers/registry.ts";
import { cronProblem, rateProblem } from "./cron-problem.ts";
import { ScheduleValidationError } from "./errors.ts";
import { evaluator, isTimeZone, parseCron, rateIntervalMs } from "./evaluate.ts";
import type { Recurrence, ScheduleSpec } from "./model.ts";
import { createScheduleInput } from "./schema.ts";

export interface ScheduleRules {
  readonly registry: HandlerRegistry;
  /** The shortest gap allowed between two occurrences, in ms. */
  readonly minIntervalMs: number;
}

/**
 * How many upcoming occurrences the interval check looks at: enough to see a list's tightest gap.
 * croner takes a fraction of a millisecond per occurrence in a zone, so this bounds a create's cost.
 */
const INTERVAL_SAMPLE = 100;

/** A validated create request: the spec, plus what only creation carries. */
export interface ValidCreate {
  readonly id: string | undefined;
  readonly spec: ScheduleSpec;
  readonly paused: boolean;
  readonly fingerprint: string;
}

export function parseCreate(raw: unknown, now: number, rules: ScheduleRules): ValidCreate {
  const parsed = createScheduleInput.safeParse(raw);
  if (!parsed.success) throw new ScheduleValidationError(fieldIssues(parsed.error));
  const { id, paused, ...input } = parsed.data;
  const spec = checkSpec(
    {
      ...input,
      startAt: input.startAt === undefined ? undefined : Date.parse(input.startAt),
      endAt: input.endAt === undefined ? undefined : Date.parse(input.endAt),
    },
    now,
    rules,
  );
  return { id, spec, paused, fingerprint: fingerprintOf(parsed.data) };
}

/**
 * Checks what the schema cannot: one of cron and rate, a known zone, an expression croner
 * accepts, a registered public event type with a valid payload, the shortest interval, and that
 * the schedule fires at least once. Rates get their anchor here.
 */
export function checkSpec(
  spec: Omit<ScheduleSpec, "anchor"> & { anchor?: number | undefined },
  now: number,
  rules: ScheduleRules,
): ScheduleSpec {
  const issues: FieldIssue[] = [];
  if ((spec.cron === undefined) === (spec.rate === undefined)) {
    issues.push({ path: "cron", message: "give cron or rate, exactly one" });
  }
  if (!isTimeZone(spec.timezone)) issues.push({ path: "timezone", message: "not an IANA time zone" });
  if (spec.startAt !== undefined && spec.endAt !== undefined && spec.endAt <= spec.startAt) {
    issues.push({ path: "endAt", message: "must be after startAt" });
  }
  const handler = rules.registry.get(spec.event.type);
  if (!handler || handler.options.internal) {
    issues.push({ path: "event.type", message: `unknown event type "${spec.event.type}"` });
  } else {
    const payload = handler.schema.safeParse(spec.event.payload);
    if (!payload.success) issues.push(...fieldIssues(payload.error, "event.payload"));
  }
  let intervalMs: number | undefined;
  if (spec.rate !== undefined) {
    intervalMs = rateIntervalMs(spec.rate);
    if (intervalMs === undefined)
      issues.push({ path: "rate", message: rateProblem(spec.rate, spec.timezone) });
  }
  if (spec.cron !== undefined && issues.length === 0) {
    try {
      parseCron(spec.cron, spec.timezone);
    } catch {
      issues.push({ path: "cron", message: cronProblem(spec.cron, spec.timezone) });
    }
  }
  if (issues.length > 0) throw new ScheduleValidationError(issues);

  const anchor =
    spec.rate === undefined
      ? undefined
      : (spec.startAt ?? spec.anchor ?? Math.ceil(now / 1000) * 1000 + intervalMs!);
  const checked: ScheduleSpec = { ...spec, anchor };
  const evaluate = evaluator(checked);
  const from = Math.max(now, spec.startAt ?? now) - 1;
  const first = evaluate.next(from);
  if (first === undefined) {
    // Name the field at fault: endAt when the expression fires but only at or after it.
    const unbounded = evaluator({ ...checked, endAt: undefined }).next(from);
    throw new ScheduleValidationError([
      unbounded !== undefined
        ? {
            path: "endAt",
            message: `never fires before endAt (the first occurrence is ${new Date(unbounded).toISOString()})`,
          }
        : { path: spec.cron !== undefined ? "cron" : "rate", message: "never fires (no occurrence matches)" },
    ]);
  }
  // Cron has whole seconds, so a minimum of one second needs no sampling.
  const shortest =
    intervalMs ??
    (rules.minIntervalMs > 1_000 ? shortestGap(evaluate.next.bind(evaluate), first) : undefined);
  if (shortest !== undefined && shortest < rules.minIntervalMs) {
    throw new ScheduleValidationError([
      {
        path: spec.cron !== undefined ? "cron" : "rate",
        message: `fires every ${shortest / 1000} s; the shortest interval allowed is ${rules.minIntervalMs / 1000} s`,
      },
    ]);
  }
  return checked;
}

function shortestGap(next: (after: number) => number | undefined, first: number): number | undefined {
  let shortest: number | undefined;
  let previous = first;
  for (let i = 0; i < INTERVAL_SAMPLE; i++) {
    const t = next(previous);
    if (t === undefined) break;
    shortest = Math.min(shortest ?? Number.POSITIVE_INFINITY, t - previous);
    previous = t;
  }
  return shortest;
}

/** The recurrence fields of a spec, for the evaluator. */
export function recurrenceOf(spec: ScheduleSpec): Recurrence {
  const { cron, rate, timezone, startAt, endAt, anchor } = spec;
  return { cron, rate, timezone, startAt, endAt, anchor };
}
