import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { LeaseService } from "../../leases/lease-service.ts";
import { json, jsonRequest, problems } from "../schemas.ts";
import type { TenantEnv } from "../tenancy.ts";

const tags = ["Leases"];
const NameParam = z.object({
  name: z
    .string()
    .regex(/^[A-Za-z0-9._:-]{1,128}$/)
    .openapi({ param: { name: "name", in: "path" }, example: "nightly-report" }),
});
const Owner = z.string().min(1).max(128);
const AcquireBody = z
  .object({ owner: Owner, ttlSeconds: z.number().int().min(1).max(86_400) })
  .strict()
  .openapi("LeaseAcquire");
const RenewBody = z
  .object({
    owner: Owner,
    token: z.number().int().min(1),
    ttlSeconds: z.number().int().min(1).max(86_400).optional(),
  })
  .strict()
  .openapi("LeaseRenew");
const ReleaseBody = z
  .object({ owner: Owner, token: z.number().int().min(1) })
  .strict()
  .openapi("LeaseRelease");
export const Grant = z
  .object({
    name: z.string(),
    owner: z.string(),
    token: z.number().int(),
    expiresAt: z.string().datetime(),
    alreadyHeld: z.boolean().optional().openapi({
      description:
        "true when this owner already held the lease: the same token, expiry moved to now + ttlSeconds",
    }),
  })
  .openapi("LeaseGrant");
export const State = z
  .object({
    name: z.string(),
    held: z.boolean(),
    // `owner`, as in acquire's answer and body: one name for the same thing everywhere.
    owner: z.string().optional().openapi({ description: "Who holds it, while it is held" }),
    token: z.number().int(),
    expiresAt: z.string().datetime().optional(),
  })
  .openapi("Lease");

const DEFAULT_RENEW_TTL_SECONDS = 30;

const grant = (g: { name: string; owner: string; token: number; expiresAt: number }) => ({
  ...g,
  expiresAt: new Date(g.expiresAt).toISOString(),
});

export function mountLeaseRoutes(app: OpenAPIHono<TenantEnv>, leases: () => LeaseService): void {
  app.openapi(
    createRoute({
      method: "post",
      path: "/v1/leases/{name}/acquire",
      tags,
      summary: "Take a lease, if nobody holds it or the holder's lease expired; the holder gets its own back",
      description:
        "The token strictly increases per lease name: pass it to what the lease protects, so it can refuse a stale holder. " +
        "An owner that already holds the lease gets it back with the same token, its expiry moved to now + ttlSeconds " +
        "(`alreadyHeld: true`); another owner gets 409 until the lease is released or expired.",
      request: { params: NameParam, ...jsonRequest(AcquireBody) },
      responses: {
        200: json(Grant, "Yours until expiresAt (again, if you held it)"),
        ...problems(409, 422, 503),
      },
    }),
    async (c) => {
      const { owner, ttlSeconds } = c.req.valid("json");
      return c.json(
        grant(await leases().acquire(c.get("tenant"), c.req.valid("param").name, owner, ttlSeconds * 1000)),
        200,
      );
    },
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/v1/leases/{name}/renew",
      tags,
      summary: "Extend a lease you hold (same owner and token, not yet expired)",
      request: { params: NameParam, ...jsonRequest(RenewBody) },
      responses: { 200: json(Grant, "Extended"), ...problems(409, 422, 503) },
    }),
    async (c) => {
      const { owner, token, ttlSeconds } = c.req.valid("json");
      const ttl = (ttlSeconds ?? DEFAULT_RENEW_TTL_SECONDS) * 1000;
      return c.json(
        grant(await leases().renew(c.get("tenant"), c.req.valid("param").name, owner, token, ttl)),
        200,
      );
    },
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/v1/leases/{name}/release",
      tags,
      summary: "Give a lease up (same owner and token)",
      request: { params: NameParam, ...jsonRequest(ReleaseBody) },
      responses: { 200: json(State, "Released"), ...problems(409, 422, 503) },
    }),
    async (c) => {
      const { owner, token } = c.req.valid("json");
      const name = c.req.valid("param").name;
      await leases().release(c.get("tenant"), name, owner, token);
      return c.json(state(await leases().get(c.get("tenant"), name)), 200);
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/v1/leases/{name}",
      tags,
      summary: "Who holds a lease, and the last token issued",
      request: { params: NameParam },
      responses: { 200: json(State, "The lease"), ...problems(503) },
    }),
    async (c) => c.json(state(await leases().get(c.get("tenant"), c.req.valid("param").name)), 200),
  );
}

function state(s: {
  name: string;
  held: boolean;
  holder: string | undefined;
  token: number;
  expiresAt: number | undefined;
}) {
  return {
    name: s.name,
    held: s.held,
    token: s.token,
    ...(s.holder !== undefined && { owner: s.holder }),
    ...(s.expiresAt !== undefined && { expiresAt: new Date(s.expiresAt).toISOString() }),
  };
}
