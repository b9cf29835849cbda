// zod as extended by @hono/zod-openapi, so these schemas also describe the public API.
import { z } from "@hono/zod-openapi";
import { backoffSchema, callbacksSchema, EVENT_TYPE, isoInstant } from "../events/schema.ts";
import { SCHEDULE_ID } from "../model/occurrence-id.ts";

export const eventTemplate = z
  .object({
    type: z.string().regex(EVENT_TYPE, "lowercase, starts with a letter, at most 64 characters"),
    payload: z.unknown().default(null),
    maxAttempts: z.number().int().min(1).max(100).optional(),
    backoff: backoffSchema.optional(),
    /** Every occurrence carries them: called with each occurrence's outcome. */
    callbacks: callbacksSchema.optional(),
  })
  .strict();

const fields = {
  cron: z.string().min(1).max(200).optional().openapi({
    description: "Five fields, or six with seconds first, read in `timezone`. Exactly one of cron and rate.",
    example: "30 2 * * *",
  }),
  rate: z
    .string()
    .max(40)
    .optional()
    .openapi({ description: 'A fixed interval: "30 seconds", "5 minutes", "1 day".', example: "5 minutes" }),
  timezone: z.string().min(1).max(64).openapi({ description: "IANA time zone.", example: "Europe/Berlin" }),
  startAt: isoInstant().openapi({ description: "No occurrence before it." }),
  endAt: isoInstant().openapi({ description: "No occurrence at or after it." }),
  event: eventTemplate,
  overlap: z.enum(["allow", "skip"]).openapi({
    description:
      "skip: an occurrence does not start while the previous one has not finished (counted as skipped).",
  }),
  jitterSeconds: z.number().int().min(0).max(86_400).openapi({
    description:
      "Each occurrence runs up to this many seconds after its instant (a stable spread per occurrence).",
  }),
  catchUp: z.enum(["latest", "all", "none"]).openapi({
    description:
      "After downtime: latest runs the most recent missed occurrence once, all runs each (the last 1,000), none skips them.",
  }),
};

/** A schedule as a client creates it. */
export const createScheduleInput = z
  .object({
    id: z
      .string()
      .regex(SCHEDULE_ID, "1 to 80 characters from A-Z a-z 0-9 . _ : -, not . or .. alone")
      .optional(),
    cron: fields.cron,
    rate: fields.rate,
    timezone: fields.timezone.default("UTC"),
    startAt: fields.startAt.optional(),
    endAt: fields.endAt.optional(),
    event: fields.event,
    overlap: fields.overlap.default("allow"),
    jitterSeconds: fields.jitterSeconds.default(0),
    catchUp: fields.catchUp.default("latest"),
    paused: z.boolean().default(false),
  })
  .strict();

export type CreateScheduleInput = z.input<typeof createScheduleInput>;

/** An edit: only the fields given change; `null` clears startAt or endAt. Giving cron drops rate and back. */
export const patchScheduleInput = z
  .object({
    cron: fields.cron,
    rate: fields.rate,
    timezone: fields.timezone.optional(),
    startAt: fields.startAt.nullable().optional(),
    endAt: fields.endAt.nullable().optional(),
    event: fields.event.optional(),
    overlap: fields.overlap.optional(),
    jitterSeconds: fields.jitterSeconds.optional(),
    catchUp: fields.catchUp.optional(),
  })
  .strict();

export type PatchScheduleInput = z.input<typeof patchScheduleInput>;
