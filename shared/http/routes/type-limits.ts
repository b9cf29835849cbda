import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { EVENT_TYPE } from "../../events/schema.ts";
import { LimitsVersionMismatchError, TenantRateLimitedError } from "../../limits/errors.ts";
import type { FlowControl } from "../../limits/flow-control.ts";
import { limitsInput, type StoredLimits } from "../../limits/model.ts";
import { problem, sendProblem } from "../problem.ts";
import { json, problems } from "../schemas.ts";
import type { TenantEnv } from "../tenancy.ts";

const tags = ["Flow control"];

export const TypeLimitsInput = limitsInput.openapi("TypeLimitsInput", {
  description:
    "A type's limits, replacing the previous ones (a field left out means no limit of that kind). " +
    "`paused`: events are still accepted and stay scheduled; on resume the overdue ones run in due order. " +
    "`ratePerSecond` and `burst`: a token bucket, so at most `burst + ratePerSecond` starts in any one second " +
    "(`burst` defaults to the rate). `maxConcurrency`: running at once.",
  example: { ratePerSecond: 50, burst: 50, maxConcurrency: 10 },
});

export const TypeLimits = z
  .object({
    type: z.string(),
    paused: z.boolean(),
    ratePerSecond: z.number().optional(),
    burst: z.number().int().optional(),
    maxConcurrency: z.number().int().optional(),
    version: z.number().int().openapi({ description: "0 until the first write; the ETag carries it." }),
    updatedAt: z.string().datetime().optional(),
  })
  .openapi("TypeLimits");

const TypeParam = z.object({
  type: z
    .string()
    .regex(EVENT_TYPE)
    .openapi({ param: { name: "type", in: "path" }, example: "webhook" }),
});

const IfMatch = z.object({
  "if-match": z
    .string()
    .optional()
    .openapi({
      param: { name: "if-match", in: "header" },
      description:
        'The ETag of the version this write replaces (`"0"` for a type never set). A stale one answers 412 and changes nothing. `*` or no header: whatever the version.',
    }),
});

const etagHeader = { ETag: { schema: { type: "string" as const }, description: "The version, quoted" } };

/** A version as an ETag: a quoted string. */
export function etagOf(version: number): string {
  return `"${version}"`;
}

/** `If-Match` → the version it names; undefined for none or `*`; null when it names no version at all. */
export function expectedVersion(header: string | undefined): number | undefined | null {
  if (header === undefined || header.trim() === "*") return undefined;
  const match = /^\s*(?:W\/)?"(\d{1,15})"\s*$/.exec(header);
  return match ? Number(match[1]) : null;
}

function view(limits: StoredLimits) {
  return {
    type: limits.type,
    paused: limits.paused,
    ...(limits.ratePerSecond !== undefined && { ratePerSecond: limits.ratePerSecond }),
    ...(limits.burst !== undefined && { burst: limits.burst }),
    ...(limits.maxConcurrency !== undefined && { maxConcurrency: limits.maxConcurrency }),
    version: limits.version,
    ...(limits.updatedAt > 0 && { updatedAt: new Date(limits.updatedAt).toISOString() }),
  };
}

/** `GET/PUT /v1/types/{type}/limits`: the caller's own limits for one of its types. */
export function mountTypeLimitRoutes(app: OpenAPIHono<TenantEnv>, flow: () => FlowControl): void {
  app.openapi(
    createRoute({
      method: "get",
      path: "/v1/types/{type}/limits",
      tags,
      summary: "A type's limits (yours only), with its version as the ETag",
      request: { params: TypeParam },
      responses: {
        200: { ...json(TypeLimits, "The limits; no limit at all for a type never set"), headers: etagHeader },
        ...problems(404, 501, 503),
      },
    }),
    async (c) => {
      const limits = await flow().get(c.get("tenant"), c.req.valid("param").type);
      c.header("ETag", etagOf(limits.version));
      return c.json(view(limits), 200);
    },
  );

  app.openapi(
    createRoute({
      method: "put",
      path: "/v1/types/{type}/limits",
      tags,
      summary: "Set a type's limits; the engine applies them within a dispatcher tick, no restart",
      description:
        "A versioned write: send the ETag you read as `If-Match`, and a concurrent change answers 412 " +
        "(with the current limits) instead of being overwritten. Without `If-Match` the write is unconditional.",
      request: {
        params: TypeParam,
        headers: IfMatch,
        body: { content: { "application/json": { schema: TypeLimitsInput } }, required: true },
      },
      responses: {
        200: { ...json(TypeLimits, "The limits now in force"), headers: etagHeader },
        ...problems(400, 404, 412, 415, 422, 501, 503),
      },
    }),
    async (c) => {
      const { type } = c.req.valid("param");
      const expected = expectedVersion(c.req.valid("header")["if-match"]);
      if (expected === null) {
        return sendProblem(
          c,
          problem("validation", "The request breaks a rule", 422, {
            detail: 'If-Match must be an ETag of these limits, such as "3", or *',
            errors: [{ path: "If-Match", message: 'an ETag such as "3", or *' }],
          }),
        ) as never;
      }
      try {
        const limits = await flow().put(c.get("tenant"), type, c.req.valid("json"), expected);
        c.header("ETag", etagOf(limits.version));
        return c.json(view(limits), 200);
      } catch (error) {
        if (!(error instanceof LimitsVersionMismatchError)) throw error;
        c.header("ETag", etagOf(error.current.version));
        return sendProblem(
          c,
          problem("precondition-failed", "The limits changed since that version", 412, {
            detail: error.message,
            current: view(error.current),
          }),
        ) as never;
      }
    },
  );
}

/**
 * The deployment's cap on creates per second for each tenant, on `POST /v1/events` and
 * `/v1/events/batch` (a batch counts each item; it is admitted whole or not at all): beyond it,
 * 429 with `Retry-After`. A Redis token bucket, so it holds across every API process.
 */
export function createsCap(flow: () => FlowControl | undefined): MiddlewareHandler<TenantEnv> {
  return async (c, next) => {
    const control = flow();
    if (c.req.method !== "POST" || !control) return next();
    let count = 1;
    if (c.req.path.endsWith("/batch")) {
      const body = (await c.req.json().catch(() => undefined)) as { events?: unknown } | undefined;
      count = Array.isArray(body?.events) ? Math.min(body.events.length, 500) : 0;
    }
    try {
      await control.takeCreates(c.get("tenant"), count);
    } catch (error) {
      if (!(error instanceof TenantRateLimitedError)) throw error;
      c.header("Retry-After", String(Math.max(1, Math.ceil(error.retryAfterMs / 1000))));
      return sendProblem(
        c,
        problem("rate-limited", "Too many events created", 429, {
          detail: error.message,
          retryAfterMs: error.retryAfterMs,
        }),
      );
    }
    return next();
  };
}
