import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import type { EventService } from "../../events/service.ts";
import type { ScheduleResult } from "../../model/event.ts";
import { checkEventCursor } from "../cursors.ts";
import { oversizedPayload, scheduleWithoutOversized } from "../limits.ts";
import { problemFor } from "../problem.ts";
import {
  BatchRequest,
  BatchResponse,
  Event,
  EventPage,
  IdParam,
  json,
  ListQuery,
  problems,
  RescheduleEvent,
  ScheduledEvent,
  ScheduleEvent,
} from "../schemas.ts";
import { serializeEvent } from "../serialize.ts";
import type { TenantEnv } from "../tenancy.ts";

const tags = ["Events"];

const scheduleRoute = createRoute({
  method: "post",
  path: "/v1/events",
  tags,
  summary: "Schedule an event",
  description:
    "Runs `type`'s handler with `payload` at `runAt` (or `delaySeconds` from now). With an `id`, a repeat of the same " +
    "content answers 200 with the existing event, and different content under the same id answers 409. " +
    "The payload may take up to 256 KiB as JSON (413 beyond) and nest up to 64 levels in the body (422 beyond).",
  request: { body: { content: { "application/json": { schema: ScheduleEvent } }, required: true } },
  responses: {
    201: json(ScheduledEvent, "Scheduled"),
    200: json(ScheduledEvent, "Already scheduled with the same content (idempotent repeat)"),
    ...problems(400, 409, 413, 415, 422, 429, 503),
  },
});

const batchRoute = createRoute({
  method: "post",
  path: "/v1/events/batch",
  tags,
  summary: "Schedule up to 500 events",
  description: "Each item gets its own result, in order; one bad item does not stop the others.",
  request: { body: { content: { "application/json": { schema: BatchRequest } }, required: true } },
  responses: { 200: json(BatchResponse, "One result per item"), ...problems(400, 413, 415, 422, 429, 503) },
});

const getRoute = createRoute({
  method: "get",
  path: "/v1/events/{id}",
  tags,
  summary: "Read an event",
  request: { params: IdParam },
  responses: { 200: json(Event, "The event"), ...problems(404, 503) },
});

const rescheduleRoute = createRoute({
  method: "patch",
  path: "/v1/events/{id}",
  tags,
  summary: "Reschedule an event that has not started",
  request: {
    params: IdParam,
    body: { content: { "application/json": { schema: RescheduleEvent } }, required: true },
  },
  responses: { 200: json(Event, "Rescheduled"), ...problems(400, 404, 409, 415, 422, 503) },
});

const cancelRoute = createRoute({
  method: "delete",
  path: "/v1/events/{id}",
  tags,
  summary: "Cancel an event that has not started",
  description:
    "A cancelled event never starts, even if its message is already in the queue. Repeating is harmless.",
  request: { params: IdParam },
  responses: { 200: json(Event, "Cancelled"), ...problems(404, 409, 503) },
});

const listRoute = createRoute({
  method: "get",
  path: "/v1/events",
  tags,
  summary: "List events, newest first",
  request: { query: ListQuery },
  responses: { 200: json(EventPage, "A page of events"), ...problems(422, 503) },
});

function scheduled(result: ScheduleResult) {
  const body = serializeEvent(result.event);
  return result.event.runAt < result.event.createdAt ? { ...body, overdue: true } : body;
}

export function mountEventRoutes(app: OpenAPIHono<TenantEnv>, events: EventService): void {
  app.openapi(scheduleRoute, async (c) => {
    const input = c.req.valid("json");
    const oversized = oversizedPayload(input, "payload");
    if (oversized) throw oversized;
    const result = await events.schedule(c.get("tenant"), input);
    return c.json(scheduled(result), result.outcome === "created" ? 201 : 200);
  });

  app.openapi(batchRoute, async (c) => {
    const results = await scheduleWithoutOversized(c.req.valid("json").events, (inputs) =>
      events.scheduleBatch(c.get("tenant"), inputs),
    );
    return c.json(
      {
        results: results.map((result, index) =>
          result.ok
            ? { index, status: result.outcome === "created" ? 201 : 200, event: scheduled(result) }
            : { index, status: problemFor(result.error).status, error: problemFor(result.error) },
        ),
      },
      200,
    );
  });

  app.openapi(getRoute, async (c) =>
    c.json(serializeEvent(await events.get(c.get("tenant"), c.req.valid("param").id)), 200),
  );

  app.openapi(rescheduleRoute, async (c) => {
    const view = await events.reschedule(c.get("tenant"), c.req.valid("param").id, c.req.valid("json"));
    return c.json(serializeEvent(view), 200);
  });

  app.openapi(cancelRoute, async (c) =>
    c.json(serializeEvent(await events.cancel(c.get("tenant"), c.req.valid("param").id)), 200),
  );

  app.openapi(listRoute, async (c) => {
    const query = c.req.valid("query");
    checkEventCursor(c.get("tenant"), query.cursor, query.status === "dead");
    const page = await events.list(c.get("tenant"), {
      status: query.status as Parameters<EventService["list"]>[1]["status"],
      type: query.type,
      scheduleId: query.scheduleId,
      limit: query.limit,
      cursor: query.cursor,
    });
    return c.json(
      { events: page.events.map(serializeEvent), ...(page.cursor && { cursor: page.cursor }) },
      200,
    );
  });
}
