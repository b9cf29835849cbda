import { z } from "@hono/zod-openapi";
import { EVENT_ID, EVENT_TYPE, rescheduleInput, scheduleInput } from "../events/schema.ts";
import { OCCURRENCE_ID, SCHEDULE_ID } from "../model/occurrence-id.ts";
import { EVENT_STATUSES } from "../model/status.ts";

/** Schemas of the public API, registered as OpenAPI components. Input shapes come from the engine. */
export const ScheduleEvent = scheduleInput.openapi("ScheduleEvent", {
  description: "An event to run at `runAt`, or `delaySeconds` from now (exactly one of the two).",
  example: {
    type: "webhook",
    delaySeconds: 7200,
    payload: { url: "https://example.com/hook", body: { orderId: 42 } },
  },
});

export const RescheduleEvent = rescheduleInput.openapi("RescheduleEvent", {
  description: "The new time: `runAt` or `delaySeconds` from now (exactly one).",
});

export const EventStatus = z.enum(EVENT_STATUSES as [string, ...string[]]).openapi("EventStatus");

export const Event = z
  .object({
    id: z.string(),
    type: z.string(),
    status: EventStatus,
    runAt: z.string().datetime(),
    attempts: z.number().int(),
    maxAttempts: z.number().int(),
    lastError: z.string().optional(),
    payload: z.unknown(),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
    heldBy: z.enum(["paused", "rate", "concurrency"]).optional().openapi({
      description:
        "Present while flow control holds the event back: its type is paused, out of rate tokens or concurrency slots, or your tenant is at its cap of running events. Held back is not late.",
    }),
    scheduleId: z
      .string()
      .optional()
      .openapi({ description: "Present on a recurring schedule's occurrence." }),
    occurrenceAt: z
      .string()
      .datetime()
      .optional()
      .openapi({ description: "The occurrence's instant (before jitter)." }),
  })
  .openapi("Event");

export const ScheduledEvent = Event.extend({
  overdue: z.boolean().optional().openapi({
    description: "Present and true when runAt was already past: the event runs as soon as possible.",
  }),
}).openapi("ScheduledEvent");

export const FieldError = z.object({ path: z.string(), message: z.string() }).openapi("FieldError");

export const ProblemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string().optional(),
    errors: z.array(FieldError).optional(),
  })
  .passthrough()
  .openapi("Problem");

export const EventPage = z
  .object({ events: z.array(Event), cursor: z.string().optional() })
  .openapi("EventPage");

export const BatchRequest = z
  .object({
    events: z
      .array(z.unknown().openapi({ description: "A ScheduleEvent; each item is validated on its own." }))
      .min(1)
      .max(500),
  })
  .strict()
  .openapi("BatchRequest");

export const BatchResult = z
  .object({
    index: z.number().int(),
    status: z.number().int().openapi({
      description: "201 created, 200 existing, 409 conflict, 413 payload too large, 422 invalid",
    }),
    event: ScheduledEvent.optional(),
    error: ProblemSchema.optional(),
  })
  .openapi("BatchResult");

export const BatchResponse = z.object({ results: z.array(BatchResult) }).openapi("BatchResponse");

export const Stats = z
  .object({
    byStatus: z.record(z.string(), z.number().int()),
    byType: z.record(z.string(), z.record(z.string(), z.number().int())),
    oldestOverdueMs: z.number().int(),
    indexSize: z.number().int(),
    heldBy: z.record(z.string(), z.number().int()).openapi({
      description:
        'Waiting events flow control holds back, by reason ("paused" | "rate" | "concurrency"). They count as scheduled or retrying in byStatus, never as overdue.',
    }),
    heldByType: z.record(z.string(), z.record(z.string(), z.number().int())),
    farPending: z.number().int().openapi({
      description:
        "Events due beyond the index's near horizon (HOURGLASS_INDEX_HORIZON_SECONDS), kept in the journal only until they come near; counted in byStatus and byType too.",
    }),
    farTruncated: z.boolean().openapi({
      description: "The far count stopped at 10,000 journal keys a shard, so byStatus and byType may be low.",
    }),
  })
  .openapi("Stats");

export const Health = z
  .object({
    status: z.enum(["ok", "degraded"]),
    checks: z
      .record(z.string(), z.object({ ok: z.boolean(), latencyMs: z.number() }))
      .optional()
      .openapi({ description: "Only for an authenticated caller." }),
  })
  .openapi("Health");

export const IdParam = z.object({
  id: z
    .string()
    .refine((id) => EVENT_ID.test(id) || OCCURRENCE_ID.test(id))
    .openapi({ param: { name: "id", in: "path" }, example: "order-42-reminder" }),
});

export const ListQuery = z.object({
  status: EventStatus.optional().openapi({ param: { name: "status", in: "query" } }),
  // A filter that no event can match is the caller's mistake, named like any other (the stream's
  // filters are checked the same way): an empty or mistyped one used to answer 200 and list all or none.
  type: z
    .string()
    .regex(EVENT_TYPE, "not an event type (lowercase, starts with a letter, at most 64 characters)")
    .optional()
    .openapi({ param: { name: "type", in: "query" } }),
  scheduleId: z
    .string()
    .regex(SCHEDULE_ID, "not a schedule id")
    .optional()
    .openapi({ param: { name: "scheduleId", in: "query" } }),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(100)
    .default(25)
    .openapi({ param: { name: "limit", in: "query" } }),
  cursor: z
    .string()
    .max(2048)
    .optional()
    .openapi({ param: { name: "cursor", in: "query" } }),
});

export const PageQuery = ListQuery.pick({ limit: true, cursor: true });

/** Every error response a route can give, for the OpenAPI document. */
export function problems(...statuses: number[]) {
  return Object.fromEntries(
    statuses.map((status) => [
      status,
      { description: "Problem", content: { "application/problem+json": { schema: ProblemSchema } } },
    ]),
  );
}

export const json = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { "application/json": { schema } },
});

/** A required JSON request body, for a route's `request`. */
export const jsonRequest = <T extends z.ZodType>(schema: T) => ({
  body: { content: { "application/json": { schema } }, required: true },
});
