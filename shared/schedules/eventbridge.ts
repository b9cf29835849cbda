import type { GetScheduleCommandOutput } from "@aws-sdk/client-scheduler";
import { SCHEDULE_ID } from "../model/occurrence-id.ts";
import { parseCron } from "./evaluate.ts";
import type { CreateScheduleInput } from "./schema.ts";

/**
 * Maps one EventBridge Scheduler schedule (as `GetSchedule` returns it) to an Hourglass schedule.
 * `mapped`: the same behaviour; `changed`: mapped, with differences listed in `notes`;
 * `refused`: no faithful mapping exists (the reason is in `notes`).
 */
export type Mapping =
  | { readonly outcome: "mapped" | "changed"; readonly input: CreateScheduleInput; readonly notes: string[] }
  | { readonly outcome: "refused"; readonly notes: string[] };

export interface MappingOptions {
  /** Event type for a Lambda target, by function name or ARN. Default: `lambda.<function name>`. */
  readonly typeFor?: Readonly<Record<string, string>>;
}

class Unmappable extends Error {}

/** How the construct describes the dispatcher's schedule (infra/construct/compute.ts). */
export const DISPATCH_SCHEDULE_DESCRIPTION =
  "Hourglass dispatcher: moves events that are almost due to the work queue";
/**
 * The name CloudFormation gives a schedule the construct left unnamed: `<stack>-<logical id>-<suffix>`,
 * the logical id ending in the construct path's 8-character hash (`HourglassDispatchScheduleA1B2C3D4`).
 */
const DISPATCH_SCHEDULE_NAME = /DispatchSchedule[0-9A-F]{8}(?:-|$)/;

/**
 * Why a schedule is part of an Hourglass deployment (its dispatcher's minute tick), or undefined.
 * Such a schedule is Hourglass's machinery, not work to move: imported, it would invoke the
 * dispatcher as an event type, and `--disable-source` would switch the deployment's dispatcher off.
 */
export function hourglassOwnSchedule(source: GetScheduleCommandOutput): string | undefined {
  if (source.Description === DISPATCH_SCHEDULE_DESCRIPTION)
    return "the dispatcher schedule of an Hourglass deployment (by its description): skipped";
  if (DISPATCH_SCHEDULE_NAME.test(source.Name ?? ""))
    return "the dispatcher schedule of an Hourglass deployment (by its CloudFormation name): skipped";
  return undefined;
}

/** EventBridge days of week are 1–7 from Sunday; cron's (and croner's) are 0–6. */
function shiftWeekdays(field: string): string {
  return field.replace(/\d+/g, (n, offset: number, whole: string) =>
    // The number after `#` is the week of the month, not a day.
    whole[offset - 1] === "#" ? n : String(Number(n) - 1),
  );
}

/** `0/15` (start/step without a range) becomes `0-59/15`, which croner accepts. */
function explicitStep(field: string, max: number): string {
  return field.replace(
    /(^|,)(\d+)\/(\d+)/g,
    (_, lead: string, start: string, step: string) => `${lead}${start}-${max}/${step}`,
  );
}

/** The six EventBridge cron fields (minutes hours day-of-month month day-of-week year) → Hourglass. */
export function mapCron(
  fields: string,
  timezone: string,
): { cron: string; startAt?: string; endAt?: string; notes: string[] } {
  const parts = fields.trim().split(/\s+/);
  if (parts.length !== 6) throw new Unmappable(`cron(${fields}) does not have six fields`);
  const [minute, hour, dom, month, dow, year] = parts as [string, string, string, string, string, string];
  const notes: string[] = [];
  const cron = [
    "0",
    explicitStep(minute, 59),
    explicitStep(hour, 23),
    explicitStep(dom, 31),
    explicitStep(month, 12),
    /\d/.test(dow) ? shiftWeekdays(explicitStep(dow, 7)) : dow,
  ].join(" ");
  try {
    parseCron(cron, timezone);
  } catch (error) {
    throw new Unmappable(`cron(${fields}): ${(error as Error).message}`);
  }
  if (year === "*") return { cron, notes };
  const years = /^(\d{4})(?:-(\d{4}))?$/.exec(year);
  if (!years)
    throw new Unmappable(`cron(${fields}): a year field other than * or one range has no equivalent`);
  const first = Number(years[1]);
  const last = Number(years[2] ?? years[1]);
  notes.push(`year ${year} became startAt/endAt (${first}-01-01 to ${last + 1}-01-01 UTC)`);
  return {
    cron,
    startAt: new Date(Date.UTC(first, 0, 1)).toISOString(),
    endAt: new Date(Date.UTC(last + 1, 0, 1)).toISOString(),
    notes,
  };
}

/** `at(2027-01-01T09:00:00)` in a zone: a cron for that local time, bounded to that one instant. */
function mapAt(local: string, instant: number | undefined) {
  const m = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)$/.exec(local);
  if (!m || instant === undefined) throw new Unmappable(`at(${local}) is not a local date and time`);
  const [, , month, day, hh, mm, ss] = m.map(Number) as number[];
  return {
    cron: `${ss} ${mm} ${hh} ${day} ${month} *`,
    startAt: new Date(instant).toISOString(),
    endAt: new Date(instant + 1_000).toISOString(),
    notes: ["one-time at() became a cron bounded by startAt/endAt to that instant"],
  };
}

/** The UTC instant of a local wall time in a zone (the first, if the time occurs twice). */
export function localToInstant(local: string, timezone: string): number | undefined {
  const m = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)$/.exec(local);
  if (!m) return undefined;
  const [y, mo, d, h, mi, s] = m.slice(1).map(Number) as [number, number, number, number, number, number];
  const cron = parseCron(`${s} ${mi} ${h} ${d} ${mo} *`, timezone);
  const guess = Date.UTC(y, mo - 1, d, h, mi, s);
  // The instant lies within a day of the naive UTC reading, whatever the zone's offset.
  const next = cron.nextRun(new Date(guess - 86_400_000 - 1_000));
  return next ? next.getTime() : undefined;
}

function typeFor(arn: string, options: MappingOptions): string {
  const fn = /^arn:aws[a-z-]*:lambda:[^:]+:\d{12}:function:([A-Za-z0-9_-]{1,64})(?::[A-Za-z0-9$_-]+)?$/.exec(
    arn,
  );
  if (!fn)
    throw new Unmappable(`target ${arn} is not a Lambda function: only Lambda targets map to an event type`);
  const explicit = options.typeFor?.[arn] ?? options.typeFor?.[fn[1]!];
  if (explicit) return explicit;
  const name = fn[1]!.toLowerCase().replace(/[^a-z0-9._-]/g, "-");
  return `lambda.${name}`.slice(0, 64);
}

export function mapSchedule(source: GetScheduleCommandOutput, options: MappingOptions = {}): Mapping {
  try {
    const notes: string[] = [];
    const group = source.GroupName ?? "default";
    const id = group === "default" ? source.Name! : `${group}:${source.Name}`;
    if (!SCHEDULE_ID.test(id))
      throw new Unmappable(`the id ${id} is not a schedule id (1 to 80 characters, not . or .. alone)`);
    const timezone = source.ScheduleExpressionTimezone ?? "UTC";
    const expression = source.ScheduleExpression ?? "";
    let recurrence: { cron?: string; rate?: string; startAt?: string; endAt?: string };
    const cron = /^cron\((.*)\)$/.exec(expression);
    const rate = /^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$/.exec(expression);
    const at = /^at\((.*)\)$/.exec(expression);
    if (cron) {
      const mapped = mapCron(cron[1]!, timezone);
      notes.push(...mapped.notes);
      recurrence = { cron: mapped.cron, startAt: mapped.startAt, endAt: mapped.endAt };
    } else if (rate) {
      recurrence = { rate: `${rate[1]} ${rate[2]}` };
    } else if (at) {
      const mapped = mapAt(at[1]!, localToInstant(at[1]!, timezone));
      notes.push(...mapped.notes);
      recurrence = mapped;
    } else {
      throw new Unmappable(`expression ${expression} is not cron(), rate() or at()`);
    }
    const startAt = latest(recurrence.startAt, source.StartDate?.toISOString());
    const endAt = earliest(recurrence.endAt, source.EndDate?.toISOString());

    const target = source.Target;
    if (!target?.Arn) throw new Unmappable("the schedule has no target");
    const type = typeFor(target.Arn, options);
    let payload: unknown = null;
    if (target.Input !== undefined) {
      try {
        payload = JSON.parse(target.Input);
      } catch {
        payload = target.Input;
        notes.push("the target's Input is not JSON: it is passed as a string");
      }
    }
    const retries = target.RetryPolicy?.MaximumRetryAttempts;
    let maxAttempts = retries === undefined ? undefined : retries + 1;
    if (maxAttempts !== undefined && maxAttempts > 100) {
      notes.push(`MaximumRetryAttempts ${retries} capped at 99 retries (maxAttempts 100)`);
      maxAttempts = 100;
    }
    if (target.RetryPolicy?.MaximumEventAgeInSeconds !== undefined)
      notes.push("MaximumEventAgeInSeconds has no equivalent: occurrences retry until maxAttempts");
    if (target.DeadLetterConfig?.Arn)
      notes.push("the target's dead-letter queue is replaced by Hourglass's dead letters");
    if (source.ActionAfterCompletion === "DELETE")
      notes.push("ActionAfterCompletion DELETE: the schedule ends instead");
    const window = source.FlexibleTimeWindow;
    const jitterSeconds = window?.Mode === "FLEXIBLE" ? (window.MaximumWindowInMinutes ?? 0) * 60 : 0;
    if (jitterSeconds > 0)
      notes.push(
        `flexible window of ${window!.MaximumWindowInMinutes} min became jitterSeconds ${jitterSeconds}`,
      );

    const input: CreateScheduleInput = {
      id,
      ...(recurrence.cron !== undefined ? { cron: recurrence.cron } : { rate: recurrence.rate! }),
      timezone,
      ...(startAt && { startAt }),
      ...(endAt && { endAt }),
      event: { type, payload, ...(maxAttempts !== undefined && { maxAttempts }) },
      jitterSeconds,
      // EventBridge never catches up missed invocations.
      catchUp: "none",
      paused: source.State === "DISABLED",
    };
    return { outcome: notes.length > 0 ? "changed" : "mapped", input, notes };
  } catch (error) {
    if (error instanceof Unmappable) return { outcome: "refused", notes: [error.message] };
    throw error;
  }
}

const latest = (a?: string, b?: string) => (a && b ? (a > b ? a : b) : (a ?? b));
const earliest = (a?: string, b?: string) => (a && b ? (a < b ? a : b) : (a ?? b));
