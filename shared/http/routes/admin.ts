import { createHash, timingSafeEqual } from "node:crypto";
import type { Hono, MiddlewareHandler } from "hono";
import type { HourglassConfig } from "../../config.ts";
import { isDispatchPaused, pausedSince, setDispatchPaused } from "../../events/pause.ts";
import type { Hourglass } from "../../hourglass.ts";
import type { Logger } from "../../logger.ts";
import { problem, sendProblem } from "../problem.ts";
import { callerArnOf, type TenantEnv } from "../tenancy.ts";

/** What the admin routes act on: the deployment-wide dispatch switch and the index's health. */
export interface AdminControl {
  status(): Promise<AdminStatus>;
  setPaused(paused: boolean): Promise<void>;
}

export interface AdminStatus {
  readonly paused: boolean;
  /** When dispatch was paused, ISO-8601. */
  readonly pausedSince?: string;
  readonly indexSize: number;
  readonly oldestOverdueMs: number;
}

export function adminControl(hourglass: Hourglass): AdminControl {
  const { redis, config, dispatcher } = hourglass;
  return {
    async status() {
      const [paused, since, health] = await Promise.all([
        isDispatchPaused(redis, config.keyPrefix),
        pausedSince(redis, config.keyPrefix),
        dispatcher.indexHealth(),
      ]);
      return {
        paused,
        ...(paused && since && { pausedSince: since }),
        indexSize: health.size,
        oldestOverdueMs: health.oldestOverdueMs,
      };
    },
    setPaused: (paused) => setDispatchPaused(redis, config.keyPrefix, paused),
  };
}

/**
 * Admin routes act on every tenant, so no tenant may call them (invariant 7):
 * - on AWS, only the IAM principals the construct names as admins (`HOURGLASS_ADMIN_PRINCIPALS`);
 * - locally, only a bearer token from `HOURGLASS_ADMIN_TOKENS`; open only when no token of any
 *   kind is configured (no admin and no API tokens: the single-user laptop).
 */
export function adminOnly(config: HourglassConfig): MiddlewareHandler<TenantEnv> {
  const digests = config.adminTokens.map(sha256);
  const open = config.mode === "local" && digests.length === 0 && config.apiTokens.size === 0;
  return async (c, next) => {
    if (open) return next();
    if (config.mode === "aws") {
      const arn = callerArnOf(c);
      if (arn && config.adminPrincipals.some((admin) => samePrincipal(arn, admin))) return next();
      return sendProblem(
        c,
        problem("forbidden", "Admin routes are for the deployment's admins", 403, {
          detail: "the caller is not among the principals the Hourglass construct names as admins",
        }),
      );
    }
    const presented = /^Bearer\s+(\S+)$/i.exec(c.req.header("authorization") ?? "")?.[1];
    const digest = sha256(presented ?? "");
    let admitted = false;
    for (const candidate of digests) if (timingSafeEqual(candidate, digest) && presented) admitted = true;
    if (admitted) return next();
    if (!presented) c.header("www-authenticate", 'Bearer realm="hourglass-admin"');
    return sendProblem(
      c,
      presented
        ? problem("forbidden", "Admin routes need an admin token", 403, {
            detail:
              digests.length === 0
                ? "no HOURGLASS_ADMIN_TOKENS are configured, and API tokens are: no one may call admin routes"
                : "this token is not one of HOURGLASS_ADMIN_TOKENS",
          })
        : problem("unauthorized", "An admin bearer token is required", 401),
    );
  };
}

/**
 * Whether the caller's ARN is the admin principal: the same IAM user, or a session of the same
 * role (`arn:aws:sts::123456789012:assumed-role/Ops/alice` is `arn:aws:iam::123456789012:role/Ops`,
 * whatever the role's path).
 */
export function samePrincipal(callerArn: string, adminArn: string): boolean {
  if (callerArn === adminArn) return true;
  const [, callerPartition, , , callerAccount, callerResource = ""] = callerArn.split(":");
  const [, adminPartition, adminService, , adminAccount, adminResource = ""] = adminArn.split(":");
  if (callerPartition !== adminPartition || callerAccount !== adminAccount || adminService !== "iam") {
    return false;
  }
  const caller = callerResource.split("/");
  const admin = adminResource.split("/");
  if (caller[0] !== "assumed-role" || admin[0] !== "role") return false;
  return caller[1] === admin[admin.length - 1];
}

/**
 * `GET /v1/admin/status`, `POST /v1/admin/pause`, `POST /v1/admin/resume`. Mounted before the
 * tenancy middleware: an admin token names no tenant. Pausing stops the dispatcher from claiming;
 * events are still accepted, and on resume the overdue ones run in due order, never early.
 */
export function mountAdminRoutes(
  app: Hono<TenantEnv>,
  deps: { config: HourglassConfig; logger: Logger; admin?: AdminControl | undefined },
): void {
  const guard = adminOnly(deps.config);
  const control = () => {
    if (!deps.admin) throw new Error("admin routes: no admin control behind this app");
    return deps.admin;
  };
  app.get("/v1/admin/status", guard, async (c) => c.json(await control().status(), 200));
  for (const [path, paused] of [
    ["/v1/admin/pause", true],
    ["/v1/admin/resume", false],
  ] as const) {
    app.post(path, guard, async (c) => {
      await control().setPaused(paused);
      deps.logger.warn(paused ? "dispatch paused by an admin" : "dispatch resumed by an admin", {});
      return c.json(await control().status(), 200);
    });
  }
}

function sha256(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}
