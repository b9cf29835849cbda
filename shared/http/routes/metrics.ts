import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Insights } from "../../metrics-store/insights.ts";
import type { TypeMetrics } from "../../metrics-store/reader.ts";
import { HORIZONS } from "../../metrics-store/timeline.ts";
import { json, problems } from "../schemas.ts";
import type { TenantEnv } from "../tenancy.ts";

const tags = ["Operations"];
const perMinute = z.array(z.number().int());
const LatenessSummary = z
  .object({ count: z.number().int(), p50Ms: z.number().int().nullable(), p99Ms: z.number().int().nullable() })
  .openapi("LatenessSummary");
const TypeMetricsSchema = z
  .object({
    created: perMinute,
    started: perMinute,
    succeeded: perMinute,
    failed: perMinute.openapi({ description: "Handler runs that failed: retried or dead-lettered" }),
    givenBack: perMinute.openapi({
      description:
        "Attempts given back and retried without counting against maxAttempts: a dependency was unavailable (a webhook origin's request slots were all busy, or its signing state could not be read)",
    }),
    latenessP50Ms: z.array(z.number().int().nullable()),
    latenessP99Ms: z.array(z.number().int().nullable()),
    lateness: z.object({
      lastHour: LatenessSummary,
      lastDay: LatenessSummary,
      histogram: z.array(z.object({ upToMs: z.number().int(), count: z.number().int() })),
    }),
  })
  .openapi("TypeMetrics", {
    description:
      "Per-minute series over the window (index i is the minute starting at `from` + i minutes); lateness is measured as the handler starts, in buckets about 19% wide, and a percentile reports its bucket's upper bound.",
  });
export const Metrics = z
  .object({
    window: z.enum(["1h", "24h"]),
    from: z.string().datetime(),
    stepSeconds: z.literal(60),
    total: TypeMetricsSchema,
    types: z.record(z.string(), TypeMetricsSchema),
  })
  .openapi("Metrics");
const MetricsQuery = z.object({
  window: z
    .enum(["1h", "24h"])
    .default("1h")
    .openapi({ param: { name: "window", in: "query" } }),
});

export const TimelineSchema = z
  .object({
    horizon: z.enum(Object.keys(HORIZONS) as [keyof typeof HORIZONS]),
    from: z.string().datetime(),
    bucketSeconds: z.number().int(),
    types: z.record(z.string(), z.array(z.number().int())),
    overdue: z.record(z.string(), z.number().int()),
    truncated: z.boolean(),
  })
  .openapi("Timeline", {
    description:
      "Pending events (scheduled or retrying) by due time, per type: bucket i starts at `from` + i × bucketSeconds. `overdue` counts events already due and not yet claimed; `truncated` says the index held more than one read takes.",
  });
const TimelineQuery = z.object({
  horizon: z
    .enum(Object.keys(HORIZONS) as [keyof typeof HORIZONS])
    .default("day")
    .openapi({ param: { name: "horizon", in: "query" } }),
});

/** `GET /v1/metrics` and `GET /v1/timeline`: the caller's own tenant only. */
export function mountMetricsRoutes(app: OpenAPIHono<TenantEnv>, insights: () => Insights): void {
  app.openapi(
    createRoute({
      method: "get",
      path: "/v1/metrics",
      tags,
      summary:
        "Per-minute throughput and lateness (kept 24 h), with p50/p99 over the last hour and day, per type",
      request: { query: MetricsQuery },
      responses: { 200: json(Metrics, "Metrics of the caller's tenant"), ...problems(422, 503) },
    }),
    async (c) => {
      const metrics = await insights().metrics(c.get("tenant"), c.req.valid("query").window);
      const types: Record<string, TypeMetrics> = metrics.types;
      return c.json({ ...metrics, from: new Date(metrics.from).toISOString(), types }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/v1/timeline",
      tags,
      summary: "Pending work by due time (next hour, day, week or year), per type",
      request: { query: TimelineQuery },
      responses: {
        200: json(TimelineSchema, "The caller's pending events by due time"),
        ...problems(422, 503),
      },
    }),
    async (c) => {
      const { bucketMs, from, ...timeline } = await insights().timeline(
        c.get("tenant"),
        c.req.valid("query").horizon,
      );
      return c.json({ ...timeline, from: new Date(from).toISOString(), bucketSeconds: bucketMs / 1000 }, 200);
    },
  );
}
