// zod as extended by @hono/zod-openapi, so these schemas can also describe the public API.
import { z } from "@hono/zod-openapi";

/**
 * Client ids: 1 to 128 characters from [A-Za-z0-9._:-], except `.` and `..`. Those two are dot
 * segments: every URL parser (the server's, fetch's, curl's) resolves `/v1/events/..` to `/v1/`,
 * even percent-encoded, so such an event could be created but never read, moved or cancelled.
 */
export const EVENT_ID = /^(?!\.\.?$)[A-Za-z0-9._:-]{1,128}$/;
/** What EVENT_ID says, for the validation message. */
const ID_RULE = "characters from A-Z a-z 0-9 . _ : -, not . or .. alone";
/** Tenants never contain `/` or `#`: both are separators in keys. */
export const TENANT = /^[A-Za-z0-9_-]{1,64}$/;
export const EVENT_TYPE = /^[a-z][a-z0-9._-]{0,63}$/;

export const backoffSchema = z
  .object({
    strategy: z.enum(["exponential", "fixed"]).default("exponential"),
    delayMs: z.number().int().min(10).max(86_400_000),
    maxDelayMs: z.number().int().min(10).max(86_400_000).optional(),
  })
  .strict()
  // A cap below the first delay contradicts it, and used to win silently (every wait the cap).
  .refine((b) => b.maxDelayMs === undefined || b.maxDelayMs >= b.delayMs, {
    path: ["maxDelayMs"],
    message: "must be at least delayMs",
  });

/** A URL Hourglass calls with an event's outcome; the webhook address guard applies when it is called. */
const callbackUrl = z
  .string()
  .max(2_048)
  .url()
  .refine((url) => /^https?:\/\//i.test(url), "must be an http or https URL");

/**
 * Called once with the event's final outcome, signed like a webhook, as an ordinary `webhook`
 * event of the same tenant (durable, retried, listed): `onSuccess` when it succeeds, `onFailure`
 * when it lands in the dead letters (not on each retry, as QStash does).
 */
export const callbacksSchema = z
  .object({ onSuccess: callbackUrl.optional(), onFailure: callbackUrl.optional() })
  .strict();

/** A date and time without a zone: it names a different instant in every zone, so it is refused. */
const LOCAL_DATETIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?$/;

/** Why a string is not an instant, in the API's words (zod's "Invalid ISO datetime" said neither). */
function instantMessage(input: unknown): string {
  const example = "such as 2026-12-06T10:00:00Z or 2026-12-06T10:00:00+02:00";
  if (typeof input !== "string") return `an ISO-8601 time as a string, ${example}`;
  if (LOCAL_DATETIME.test(input)) {
    return `needs a time zone: add Z (UTC) or an offset such as +02:00 (${input}Z, ${input}+02:00)`;
  }
  return `an ISO-8601 time with Z or an offset, ${example}`;
}

/** An ISO-8601 instant: date, time and Z or an offset. */
export function isoInstant() {
  return z.iso.datetime({ offset: true, error: (issue) => instantMessage(issue.input) });
}

/** When an event runs: an ISO-8601 time, or a delay from now. The engine checks the horizon. */
const when = {
  runAt: isoInstant().optional(),
  delaySeconds: z
    .number()
    .min(0)
    .max(400 * 86_400)
    .optional(),
};

/** One event as a client schedules it. The engine adds the checks that need configuration. */
export const scheduleInput = z
  .object({
    id: z.string().regex(EVENT_ID, `1 to 128 ${ID_RULE}`).optional(),
    type: z.string().regex(EVENT_TYPE, "lowercase, starts with a letter, at most 64 characters"),
    payload: z.unknown().default(null),
    ...when,
    maxAttempts: z.number().int().min(1).max(100).optional(),
    backoff: backoffSchema.optional(),
    callbacks: callbacksSchema.optional(),
  })
  .strict();

export type ScheduleInput = z.input<typeof scheduleInput>;

export const rescheduleInput = z.object(when).strict();

export type RescheduleInput = z.input<typeof rescheduleInput>;
