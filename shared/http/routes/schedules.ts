import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { EVENT_TYPE } from "../../events/schema.ts";
import { SCHEDULE_ID } from "../../model/occurrence-id.ts";
import {
  ScheduleChangedError,
  ScheduleConflictError,
  ScheduleNotFoundError,
} from "../../schedules/errors.ts";
import type { ScheduleView } from "../../schedules/model.ts";
import { createScheduleInput, patchScheduleInput } from "../../schedules/schema.ts";
import type { ScheduleService } from "../../schedules/service.ts";
import { checkScheduleCursor } from "../cursors.ts";
import { problem, sendProblem } from "../problem.ts";
import { json, PageQuery, problems } from "../schemas.ts";
import type { TenantEnv } from "../tenancy.ts";

const tags = ["Schedules"];
const iso = (t: number | undefined) => (t === undefined ? undefined : new Date(t).toISOString());

export const CreateSchedule = createScheduleInput.openapi("CreateSchedule", {
  description: "A recurring schedule: `cron` or `rate`, read in `timezone`; each occurrence runs `event`.",
  example: {
    id: "nightly-report",
    cron: "30 2 * * *",
    timezone: "Europe/Berlin",
    event: { type: "webhook", payload: { url: "https://example.com/report" } },
  },
});

export const PatchSchedule = patchScheduleInput.openapi("PatchSchedule");

export const Schedule = z
  .object({
    id: z.string(),
    cron: z.string().optional(),
    rate: z.string().optional(),
    timezone: z.string(),
    startAt: z.string().datetime().optional(),
    endAt: z.string().datetime().optional(),
    event: z.object({
      type: z.string(),
      payload: z.unknown(),
      maxAttempts: z.number().int().optional(),
      backoff: z.unknown().optional(),
    }),
    overlap: z.enum(["allow", "skip"]),
    jitterSeconds: z.number().int(),
    catchUp: z.enum(["latest", "all", "none"]),
    state: z.enum(["active", "paused", "ended"]),
    revision: z.number().int(),
    nextAt: z.string().datetime().optional().openapi({ description: "The next occurrence not yet created." }),
    lastOccurrenceAt: z.string().datetime().optional(),
    occurrences: z.number().int().openapi({ description: "Occurrences created so far." }),
    skipped: z.number().int().openapi({ description: 'Occurrences not run because of overlap "skip".' }),
    missed: z.number().int().openapi({
      description:
        "Occurrences missed during downtime and not caught up, or whose id another event already held.",
    }),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
  })
  .openapi("Schedule");

const SchedulePage = z
  .object({ schedules: z.array(Schedule), cursor: z.string().optional() })
  .openapi("SchedulePage");

const Occurrences = z
  .object({
    occurrences: z.array(
      z.object({
        at: z.string().datetime().openapi({ description: "UTC" }),
        local: z
          .string()
          .openapi({ description: "The same instant in the schedule's zone, with its offset" }),
      }),
    ),
  })
  .openapi("Occurrences");

const ScheduleStats = z
  .object({
    schedules: z.object({ active: z.number().int(), paused: z.number().int(), ended: z.number().int() }),
    occurrences: z.number().int(),
    skipped: z.number().int(),
    missed: z.number().int(),
  })
  .openapi("ScheduleStats");

const ScheduleIdParam = z.object({
  id: z
    .string()
    .regex(SCHEDULE_ID)
    .openapi({ param: { name: "id", in: "path" }, example: "nightly-report" }),
});

const ListSchedulesQuery = PageQuery.extend({
  // As the events list: a type no event can have is the caller's mistake, a 422 naming it.
  type: z
    .string()
    .regex(EVENT_TYPE, "not an event type (lowercase, starts with a letter, at most 64 characters)")
    .optional()
    .openapi({ param: { name: "type", in: "query" } }),
  state: z
    .enum(["active", "paused", "ended"])
    .optional()
    .openapi({ param: { name: "state", in: "query" } }),
});

const NextQuery = z.object({
  count: z.coerce
    .number()
    .int()
    .min(1)
    .max(100)
    .default(10)
    .openapi({ param: { name: "count", in: "query" } }),
});

const body = <T extends z.ZodType>(schema: T) => ({
  body: { content: { "application/json": { schema } }, required: true },
});

const createRouteDef = createRoute({
  method: "post",
  path: "/v1/schedules",
  tags,
  summary: "Create a recurring schedule",
  description:
    "Each occurrence becomes an ordinary event with id `<scheduleId>@<instant>~<revision>.<incarnation>`, " +
    "created by the dispatcher a look-ahead before it is due. The incarnation is drawn at creation, so a " +
    "schedule deleted and created again under the same id never meets the old one's events. With an `id`, the " +
    "same body again answers 200, a different body 409.",
  request: body(CreateSchedule),
  responses: {
    201: json(Schedule, "Created"),
    200: json(Schedule, "Already exists with the same content (idempotent repeat)"),
    ...problems(400, 409, 413, 415, 422, 503),
  },
});

const listRouteDef = createRoute({
  method: "get",
  path: "/v1/schedules",
  tags,
  summary: "List schedules in id order",
  request: { query: ListSchedulesQuery },
  responses: { 200: json(SchedulePage, "A page of schedules"), ...problems(422, 503) },
});

const getRouteDef = createRoute({
  method: "get",
  path: "/v1/schedules/{id}",
  tags,
  summary: "Read a schedule",
  request: { params: ScheduleIdParam },
  responses: { 200: json(Schedule, "The schedule"), ...problems(404, 503) },
});

const patchRouteDef = createRoute({
  method: "patch",
  path: "/v1/schedules/{id}",
  tags,
  summary: "Edit a schedule",
  description:
    "Occurrences already created and not started are cancelled and replaced by the new revision's.",
  request: { params: ScheduleIdParam, ...body(PatchSchedule) },
  responses: { 200: json(Schedule, "Edited"), ...problems(400, 404, 409, 415, 422, 503) },
});

const deleteRouteDef = createRoute({
  method: "delete",
  path: "/v1/schedules/{id}",
  tags,
  summary: "Delete a schedule and cancel its occurrences that have not started",
  request: { params: ScheduleIdParam },
  responses: { 200: json(Schedule, "Deleted (as it was)"), ...problems(404, 503) },
});

const pauseRouteDef = createRoute({
  method: "post",
  path: "/v1/schedules/{id}/pause",
  tags,
  summary: "Pause a schedule and cancel its occurrences that have not started",
  request: { params: ScheduleIdParam },
  responses: { 200: json(Schedule, "Paused"), ...problems(404, 409, 503) },
});

const resumeRouteDef = createRoute({
  method: "post",
  path: "/v1/schedules/{id}/resume",
  tags,
  summary: "Resume a paused schedule from its next occurrence after now",
  request: { params: ScheduleIdParam },
  responses: { 200: json(Schedule, "Active again"), ...problems(404, 409, 503) },
});

const nextRouteDef = createRoute({
  method: "get",
  path: "/v1/schedules/{id}/next",
  tags,
  summary: "The next occurrences, in UTC and in the schedule's zone",
  description: "Check a DST week before trusting a schedule: each instant is given in UTC and as local time.",
  request: { params: ScheduleIdParam, query: NextQuery },
  responses: { 200: json(Occurrences, "Upcoming occurrences"), ...problems(404, 422, 503) },
});

const statsRouteDef = createRoute({
  method: "get",
  path: "/v1/stats/schedules",
  tags,
  summary: "Schedules by state, and occurrences created, skipped and missed",
  responses: { 200: json(ScheduleStats, "Statistics"), ...problems(503) },
});

export function serializeSchedule(view: ScheduleView) {
  return {
    id: view.id,
    ...(view.cron !== undefined && { cron: view.cron }),
    ...(view.rate !== undefined && { rate: view.rate }),
    timezone: view.timezone,
    ...(view.startAt !== undefined && { startAt: iso(view.startAt) }),
    ...(view.endAt !== undefined && { endAt: iso(view.endAt) }),
    event: {
      type: view.event.type,
      payload: view.event.payload,
      ...(view.event.maxAttempts !== undefined && { maxAttempts: view.event.maxAttempts }),
      ...(view.event.backoff !== undefined && { backoff: view.event.backoff }),
    },
    overlap: view.overlap,
    jitterSeconds: view.jitterSeconds,
    catchUp: view.catchUp,
    state: view.state,
    revision: view.revision,
    ...(view.nextAt !== undefined && { nextAt: iso(view.nextAt) }),
    ...(view.lastOccurrenceAt !== undefined && { lastOccurrenceAt: iso(view.lastOccurrenceAt) }),
    occurrences: view.occurrences,
    skipped: view.skipped,
    missed: view.missed,
    createdAt: iso(view.createdAt)!,
    updatedAt: iso(view.updatedAt)!,
  };
}

/** The schedule errors as problem documents; anything else goes on to the app's error handler. */
function scheduleProblem(c: Context, error: unknown): Response {
  if (error instanceof ScheduleNotFoundError) {
    return sendProblem(c, problem("not-found", "No such schedule", 404, { detail: error.message }));
  }
  if (error instanceof ScheduleConflictError) {
    return sendProblem(
      c,
      problem("idempotency-conflict", "The id exists with different content", 409, {
        detail: error.message,
        existing: serializeSchedule(error.existing),
      }),
    );
  }
  if (error instanceof ScheduleChangedError) {
    return sendProblem(
      c,
      problem("state-conflict", "Changed by another request", 409, { detail: error.message }),
    );
  }
  throw error;
}

export function mountScheduleRoutes(app: OpenAPIHono<TenantEnv>, schedules: () => ScheduleService): void {
  app.openapi(createRouteDef, async (c) => {
    try {
      const result = await schedules().create(c.get("tenant"), c.req.valid("json"));
      return c.json(serializeSchedule(result.schedule), result.created ? 201 : 200);
    } catch (error) {
      return scheduleProblem(c, error) as never;
    }
  });

  app.openapi(listRouteDef, async (c) => {
    const query = c.req.valid("query");
    checkScheduleCursor(c.get("tenant"), query.cursor);
    const page = await schedules().list(c.get("tenant"), query);
    return c.json(
      { schedules: page.schedules.map(serializeSchedule), ...(page.cursor && { cursor: page.cursor }) },
      200,
    );
  });

  app.openapi(getRouteDef, async (c) => {
    try {
      return c.json(serializeSchedule(await schedules().get(c.get("tenant"), c.req.valid("param").id)), 200);
    } catch (error) {
      return scheduleProblem(c, error) as never;
    }
  });

  app.openapi(patchRouteDef, async (c) => {
    try {
      const view = await schedules().update(c.get("tenant"), c.req.valid("param").id, c.req.valid("json"));
      return c.json(serializeSchedule(view), 200);
    } catch (error) {
      return scheduleProblem(c, error) as never;
    }
  });

  app.openapi(deleteRouteDef, async (c) => {
    try {
      return c.json(
        serializeSchedule(await schedules().delete(c.get("tenant"), c.req.valid("param").id)),
        200,
      );
    } catch (error) {
      return scheduleProblem(c, error) as never;
    }
  });

  app.openapi(pauseRouteDef, async (c) => {
    try {
      return c.json(
        serializeSchedule(await schedules().pause(c.get("tenant"), c.req.valid("param").id)),
        200,
      );
    } catch (error) {
      return scheduleProblem(c, error) as never;
    }
  });

  app.openapi(resumeRouteDef, async (c) => {
    try {
      return c.json(
        serializeSchedule(await schedules().resume(c.get("tenant"), c.req.valid("param").id)),
        200,
      );
    } catch (error) {
      return scheduleProblem(c, error) as never;
    }
  });

  app.openapi(nextRouteDef, async (c) => {
    try {
      const list = await schedules().next(
        c.get("tenant"),
        c.req.valid("param").id,
        c.req.valid("query").count,
      );
      return c.json({ occurrences: list.map((o) => ({ at: iso(o.at)!, local: o.local })) }, 200);
    } catch (error) {
      return scheduleProblem(c, error) as never;
    }
  });

  app.openapi(statsRouteDef, async (c) => c.json(await schedules().stats(c.get("tenant")), 200));
}
