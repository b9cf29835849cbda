import { createHash, timingSafeEqual } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import type { HourglassConfig } from "../config.ts";
import { problem, sendProblem } from "./problem.ts";

export const DEFAULT_TENANT = "default";

export type TenantEnv = { Variables: { tenant: string } };

interface LambdaRequestContext {
  identity?: { userArn?: string | null; caller?: string | null; apiKeyId?: string | null };
}

/**
 * Decides which tenant a request belongs to; every stored object is namespaced by it.
 * - With HOURGLASS_API_TOKENS: a bearer token is required, and names the tenant.
 * - On AWS (IAM authorization): the caller's IAM principal, or the API key when keys are on.
 * - Otherwise (local, no configuration): one default tenant.
 */
export function tenancy(config: HourglassConfig): MiddlewareHandler<TenantEnv> {
  const tokens = [...config.apiTokens].map(([token, tenant]) => ({ digest: sha256(token), tenant }));
  return async (c, next) => {
    if (tokens.length > 0) {
      const header = c.req.header("authorization") ?? "";
      const presented = /^Bearer\s+(\S+)$/i.exec(header)?.[1];
      // Every configured token is compared, digest against digest, so timing says nothing.
      const digest = sha256(presented ?? "");
      let tenant: string | undefined;
      for (const candidate of tokens)
        if (timingSafeEqual(candidate.digest, digest) && presented) tenant = candidate.tenant;
      if (!tenant) {
        c.header("www-authenticate", 'Bearer realm="hourglass"');
        return sendProblem(c, problem("unauthorized", "A valid bearer token is required", 401));
      }
      c.set("tenant", tenant);
      return next();
    }
    const context = (c.env as { event?: { requestContext?: LambdaRequestContext } } | undefined)?.event
      ?.requestContext;
    const identity = context?.identity;
    if (identity?.apiKeyId) c.set("tenant", tenantOf(`key-${identity.apiKeyId}`));
    else if (identity?.userArn) c.set("tenant", tenantFromArn(identity.userArn));
    else if (config.mode === "aws") return sendProblem(c, problem("unauthorized", "No caller identity", 401));
    else c.set("tenant", DEFAULT_TENANT);
    return next();
  };
}

/** `arn:aws:sts::123456789012:assumed-role/Orders/session` → `123456789012-Orders`. */
export function tenantFromArn(arn: string): string {
  const [, , , , account = "", resource = ""] = arn.split(":");
  const parts = resource.split("/");
  const name = parts[0] === "assumed-role" ? parts[1] : parts[parts.length - 1];
  return tenantOf(`${account}-${name ?? "unknown"}`);
}

function tenantOf(raw: string): string {
  return raw.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64);
}

function sha256(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}
