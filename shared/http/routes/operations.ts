import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { EventService } from "../../events/service.ts";
import type { Logger } from "../../logger.ts";
import { checkEventCursor } from "../cursors.ts";
import type { HealthReport } from "../health.ts";
import { Event, EventPage, Health, IdParam, json, PageQuery, problems, Stats } from "../schemas.ts";
import { serializeEvent } from "../serialize.ts";
import type { TenantEnv } from "../tenancy.ts";

const deadLettersRoute = createRoute({
  method: "get",
  path: "/v1/dead-letters",
  tags: ["Dead letters"],
  summary: "List dead letters, most recent first",
  request: { query: PageQuery },
  responses: { 200: json(EventPage, "A page of dead events"), ...problems(422, 503) },
});

const replayRoute = createRoute({
  method: "post",
  path: "/v1/dead-letters/{id}/replay",
  tags: ["Dead letters"],
  summary: "Run a dead letter again, now, with its attempts reset",
  request: { params: IdParam },
  responses: { 200: json(Event, "Scheduled again"), ...problems(404, 409, 503) },
});

const statsRoute = createRoute({
  method: "get",
  path: "/v1/stats",
  tags: ["Operations"],
  summary: "Counts by status and type, the oldest overdue event's lag, and the index size",
  responses: { 200: json(Stats, "Statistics"), ...problems(503) },
});

export const healthRoute = createRoute({
  method: "get",
  path: "/health",
  tags: ["Operations"],
  summary: "200 once Redis, DynamoDB and SQS answer",
  security: [],
  responses: {
    200: json(Health, "Every dependency answers"),
    503: json(Health, "A dependency does not answer"),
  },
});

export function mountOperationRoutes(app: OpenAPIHono<TenantEnv>, events: EventService): void {
  app.openapi(deadLettersRoute, async (c) => {
    const { limit, cursor } = c.req.valid("query");
    checkEventCursor(c.get("tenant"), cursor, true);
    const page = await events.deadLetters(c.get("tenant"), limit, cursor);
    return c.json(
      { events: page.events.map(serializeEvent), ...(page.cursor && { cursor: page.cursor }) },
      200,
    );
  });

  app.openapi(replayRoute, async (c) =>
    c.json(serializeEvent(await events.replay(c.get("tenant"), c.req.valid("param").id)), 200),
  );

  app.openapi(statsRoute, async (c) => c.json(await events.stats(c.get("tenant")), 200));
}

/**
 * `/health` sits outside the tenancy middleware (load balancers and probes call it without
 * credentials), so a caller without them learns only up or down. An authenticated caller sees
 * each check, but never a dependency's error text: that names internal addresses
 * (`connect ECONNREFUSED 10.0.3.17:6380`), and is for the operator's log only.
 */
export function mountHealthRoute(
  app: OpenAPIHono<TenantEnv>,
  health: () => Promise<HealthReport>,
  authenticated: (c: Context) => boolean,
  logger: Logger,
): void {
  app.openapi(healthRoute, async (c) => {
    const report = await health();
    const code = report.status === "ok" ? 200 : 503;
    const failed = Object.entries(report.checks).filter(([, check]) => !check.ok);
    if (failed.length > 0)
      logger.warn("health check failed", {
        checks: Object.fromEntries(failed.map(([name, check]) => [name, check.error])),
      });
    if (!authenticated(c)) return c.json({ status: report.status }, code);
    const checks = Object.fromEntries(
      Object.entries(report.checks).map(([name, { ok, latencyMs }]) => [name, { ok, latencyMs }]),
    );
    return c.json({ status: report.status, checks }, code);
  });
}
