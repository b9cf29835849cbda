import { parseCron } from "./evaluate.ts";
import { mapCron } from "./eventbridge.ts";

/**
 * Why a cron or rate expression is refused, in Hourglass's own words. croner's messages name its
 * internals ("mode '5-or-6-parts'", "configuration entry 4"), and one of them called a 7-part
 * expression allowed in the same breath as refusing it; a client needs to know which field is
 * wrong and what is allowed. EventBridge Scheduler's `cron(…)`, `rate(…)` and `at(…)` are
 * recognised and answered with the way to write them here.
 */

const IMPORT_HINT = "`hourglass schedules import --from-eventbridge` copies existing EventBridge schedules";

export const CRON_RULE =
  "five fields (minute hour day-of-month month day-of-week), or six with seconds first; each field " +
  "is *, a value, a range (1-5), a list (1,15) or a step (*/15); months 1-12 or JAN-DEC, days of the " +
  "week 0-7 (0 and 7 are Sunday) or SUN-SAT; ? in a day field, L (last) and # (nth weekday) as in Vixie cron";

const RATE_RULE = 'a number and a unit: "30 seconds", "5 minutes", "1 day"';

const FIELDS_5 = ["minute", "hour", "day-of-month", "month", "day-of-week"] as const;
const FIELD_RANGE: Record<string, string> = {
  second: "0-59",
  minute: "0-59",
  hour: "0-23",
  "day-of-month": "1-31, L or ?",
  month: "1-12 or JAN-DEC",
  "day-of-week": "0-7 or SUN-SAT, with L or # (nth), or ?",
};

/** An EventBridge Scheduler expression in a field of ours: how to write it here, or undefined. */
function eventBridgeProblem(
  expression: string,
  timezone: string,
  field: "cron" | "rate",
): string | undefined {
  const wrapped = /^(cron|rate|at)\((.*)\)$/i.exec(expression.trim());
  if (!wrapped) return undefined;
  const [, kind, inner] = wrapped as unknown as [string, string, string];
  switch (kind.toLowerCase()) {
    case "rate":
      return `an EventBridge rate expression: here give the rate field "${inner.trim()}" without rate( ); ${IMPORT_HINT}`;
    case "at":
      return `an EventBridge one-time at() expression: here schedule one event with runAt instead; ${IMPORT_HINT}`;
    default:
      return eventBridgeCron(inner, timezone, field);
  }
}

/** EventBridge's six cron fields (minutes … year): the Hourglass expression they become. */
function eventBridgeCron(fields: string, timezone: string, field: "cron" | "rate"): string {
  const lead = field === "rate" ? "it belongs in cron, not rate: " : "";
  try {
    const mapped = mapCron(fields, timezone);
    const bounds = mapped.startAt
      ? ` with startAt ${mapped.startAt} and endAt ${mapped.endAt} for the year field`
      : "";
    return (
      `an EventBridge cron expression: ${lead}here write cron "${mapped.cron}"${bounds} (seconds first, ` +
      `days of the week 0-6 from Sunday, no year field); ${IMPORT_HINT}`
    );
  } catch {
    return `an EventBridge cron expression, which has a year field and counts weekdays from 1: ${lead}here cron is ${CRON_RULE}; ${IMPORT_HINT}`;
  }
}

/** Why `expression` is not a cron expression Hourglass takes (it is one when croner refused it). */
export function cronProblem(expression: string, timezone: string): string {
  const eventBridge = eventBridgeProblem(expression, timezone, "cron");
  if (eventBridge) return eventBridge;
  const parts = expression.trim().split(/\s+/);
  // Six EventBridge fields without cron( ): a `?` day and a trailing year (or *) give them away.
  if (parts.length === 6 && parts.includes("?") && /^(\*|\d{4}(-\d{4})?)$/.test(parts[5]!)) {
    return eventBridgeCron(expression, timezone, "cron");
  }
  if (parts.length !== 5 && parts.length !== 6) {
    return `has ${parts.length} field${parts.length === 1 ? "" : "s"}; a cron expression here is ${CRON_RULE}`;
  }
  const names = parts.length === 6 ? ["second", ...FIELDS_5] : [...FIELDS_5];
  for (let i = 0; i < parts.length; i++) {
    // Each field alone, the others *: the first one that fails by itself is the one to name.
    const alone = parts.map((part, j) => (j === i ? part : "*")).join(" ");
    if (!parses(alone, timezone)) {
      const name = names[i]!;
      return `the ${name} field "${parts[i]}" is not valid (${name}: ${FIELD_RANGE[name]}); a cron expression here is ${CRON_RULE}`;
    }
  }
  return `not a valid cron expression: ${CRON_RULE}`;
}

/** Why `rate` is not a rate Hourglass takes. */
export function rateProblem(rate: string, timezone: string): string {
  return eventBridgeProblem(rate, timezone, "rate") ?? RATE_RULE;
}

function parses(expression: string, timezone: string): boolean {
  try {
    parseCron(expression, timezone);
    return true;
  } catch {
    return false;
  }
}
