import { createHash, timingSafeEqual } from "node:crypto";
import type { Context, MiddlewareHandler } from "hono";
import type { HourglassConfig } from "../config.ts";
import { type Problem, problem, sendProblem } from "./problem.ts";

export const DEFAULT_TENANT = "default";

export type TenantEnv = { Variables: { tenant: string } };

interface LambdaRequestContext {
  /** REST APIs, and HTTP APIs with payload format 1.0. */
  identity?: { userArn?: string | null; caller?: string | null; apiKeyId?: string | null };
  /** HTTP APIs with payload format 2.0 put the IAM caller here instead. */
  authorizer?: { iam?: { userArn?: string | null } | null } | null;
}

/**
 * The IAM caller API Gateway verified, in whichever payload format the integration uses; undefined
 * outside Lambda. The tenant and the admin check both read it here, so they cannot disagree.
 */
export function callerArnOf(c: Context): string | undefined {
  const context = (c.env as { event?: { requestContext?: LambdaRequestContext } } | undefined)?.event
    ?.requestContext;
  return context?.identity?.userArn ?? context?.authorizer?.iam?.userArn ?? undefined;
}

/**
 * Decides which tenant a request belongs to; every stored object is namespaced by it. The tenant
 * is exactly the caller:
 * - With HOURGLASS_API_TOKENS: a bearer token is required, and names the tenant.
 * - On AWS (IAM authorization): the caller's IAM principal, type included. An API key only
 *   throttles (usage plans): many principals may share one key, so it never names a tenant.
 * - Otherwise (local, no configuration): one default tenant.
 */
export function tenancy(config: HourglassConfig): MiddlewareHandler<TenantEnv> {
  const identify = identifier(config);
  return async (c, next) => {
    const caller = identify(c);
    if ("problem" in caller) {
      if (caller.problem.status === 401 && config.apiTokens.size > 0)
        c.header("www-authenticate", 'Bearer realm="hourglass"');
      return sendProblem(c, caller.problem);
    }
    c.set("tenant", caller.tenant);
    return next();
  };
}

export type Caller = { readonly tenant: string } | { readonly problem: Problem };

/**
 * Who is calling, without answering: the tenancy middleware refuses on a problem, `/health` (which
 * sits outside it) only decides how much to say.
 */
export function identifier(config: HourglassConfig): (c: Context) => Caller {
  const tokens = [...config.apiTokens].map(([token, tenant]) => ({ digest: sha256(token), tenant }));
  return (c) => {
    if (tokens.length > 0) {
      const header = c.req.header("authorization") ?? "";
      const presented = /^Bearer\s+(\S+)$/i.exec(header)?.[1];
      // Every configured token is compared, digest against digest, so timing says nothing.
      const digest = sha256(presented ?? "");
      let tenant: string | undefined;
      for (const candidate of tokens)
        if (timingSafeEqual(candidate.digest, digest) && presented) tenant = candidate.tenant;
      return tenant
        ? { tenant }
        : { problem: problem("unauthorized", "A valid bearer token is required", 401) };
    }
    const arn = callerArnOf(c);
    if (arn) {
      const principal = principalOf(arn);
      if (!principal) return { problem: problem("unauthorized", "Unrecognised caller identity", 401) };
      if (principal.kind === "fed" && !config.allowFederatedUsers) {
        return {
          problem: problem("forbidden", "Federated-user sessions are not accepted", 403, {
            detail:
              "GetFederationToken sessions share their caller's identity; use a role, or set HOURGLASS_ALLOW_FEDERATED_USERS",
          }),
        };
      }
      return { tenant: tenantOf(principal) };
    }
    if (config.mode === "aws") return { problem: problem("unauthorized", "No caller identity", 401) };
    return { tenant: DEFAULT_TENANT };
  };
}

/** An IAM principal, reduced to what identifies it: a role's session or a user's path does not. */
export interface Principal {
  readonly partition: string;
  readonly account: string;
  readonly kind: "role" | "user" | "fed" | "root";
  /** Empty for the account root. */
  readonly name: string;
}

/** Parses the caller ARN API Gateway reports. Undefined for a form Hourglass does not know. */
export function principalOf(arn: string): Principal | undefined {
  const match = /^arn:([a-z0-9-]+):(iam|sts)::(\d{12}):(.+)$/.exec(arn);
  if (!match) return undefined;
  const [, partition = "", , account = "", resource = ""] = match;
  if (resource === "root") return { partition, account, kind: "root", name: "" };
  const parts = resource.split("/");
  const name =
    parts[0] === "assumed-role" ? parts[1] : parts[0] === "user" ? parts[parts.length - 1] : parts[1];
  if (!name || parts.length < 2) return undefined;
  if (parts[0] === "assumed-role" && parts.length >= 3) return { partition, account, kind: "role", name };
  if (parts[0] === "user") return { partition, account, kind: "user", name };
  if (parts[0] === "federated-user" && parts.length === 2) return { partition, account, kind: "fed", name };
  return undefined;
}

/**
 * `<account>-<type>-<name>` when the name is safe as it stands (letters, digits and `-`, short
 * enough) in the `aws` partition; otherwise `<account>-<type>_<hash>`, a 96-bit hash of the
 * whole principal. The two forms cannot meet (a safe name has no `_`), the type keeps
 * `user/Orders` and `role/Orders` apart, and no name is cut or rewritten, so two principals
 * never share a tenant. Tenants stay within `[A-Za-z0-9_-]{1,64}`, the alphabet the keys use.
 */
export function tenantOf(principal: Principal): string {
  const head = `${principal.account}-${principal.kind}`;
  if (principal.kind === "root" && principal.partition === "aws") return head;
  if (principal.partition === "aws" && /^[A-Za-z0-9-]{1,46}$/.test(principal.name))
    return `${head}-${principal.name}`;
  const canonical = `${principal.partition}|${principal.account}|${principal.kind}|${principal.name}`;
  return `${head}_${createHash("sha256").update(canonical).digest("hex").slice(0, 24)}`;
}

/** A caller ARN that names no tenant: a form Hourglass does not know, or one it refuses. */
export class PrincipalRefusedError extends Error {
  constructor(
    readonly arn: string,
    readonly reason: "unknown form" | "federated user",
  ) {
    super(`caller ${arn} names no tenant: ${reason}`);
    this.name = "PrincipalRefusedError";
  }
}

/** The tenant of a caller ARN, for tools and tests. Throws PrincipalRefusedError. */
export function tenantFromArn(arn: string, options: { allowFederatedUsers: boolean }): string {
  const principal = principalOf(arn);
  if (!principal) throw new PrincipalRefusedError(arn, "unknown form");
  if (principal.kind === "fed" && !options.allowFederatedUsers)
    throw new PrincipalRefusedError(arn, "federated user");
  return tenantOf(principal);
}

function sha256(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}
