import fc from "fast-check";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../shared/config.ts";
import { principalOf, type TenantEnv, tenancy, tenantFromArn } from "../../shared/http/tenancy.ts";

/** On AWS the tenant comes from API Gateway's request context: the IAM principal, never the API key. */
function appFor(mode: "local" | "aws", env: Record<string, string> = {}) {
  const config = loadConfig({ HOURGLASS_MODE: mode, HOURGLASS_WEBHOOK_SECRET: "x".repeat(32), ...env });
  const app = new Hono<TenantEnv>();
  app.use("*", tenancy(config));
  app.get("/who", (c) => c.json({ tenant: c.get("tenant") }));
  return app;
}

const lambdaEnv = (identity: Record<string, string | null>) => ({ event: { requestContext: { identity } } });
const tenant = (arn: string) => tenantFromArn(arn, { allowFederatedUsers: true });

describe("tenancy", () => {
  it("keeps the principal's type in the tenant", () => {
    expect(tenant("arn:aws:sts::123456789012:assumed-role/Orders/i-0abc")).toBe("123456789012-role-Orders");
    expect(tenant("arn:aws:iam::123456789012:user/Orders")).toBe("123456789012-user-Orders");
    expect(tenant("arn:aws:sts::123456789012:federated-user/Orders")).toBe("123456789012-fed-Orders");
    expect(tenant("arn:aws:iam::123456789012:root")).toBe("123456789012-root");
    // Every session of a role is the same principal.
    expect(tenant("arn:aws:sts::123456789012:assumed-role/Orders/other-session")).toBe(
      "123456789012-role-Orders",
    );
  });

  it("maps names that are not safe as they stand to a hash of the principal, so none collide", () => {
    const names = ["Orders.prod", "Orders@prod", "Orders_prod", "Orders-prod", "Orders+prod", "Orders=prod"];
    const tenants = names.map((name) => tenant(`arn:aws:iam::123456789012:user/${name}`));
    expect(new Set(tenants).size).toBe(names.length);
    expect(tenants[3]).toBe("123456789012-user-Orders-prod");
    for (const t of tenants) expect(t).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    // Long names differing only after the 51st character.
    const long = "a".repeat(60);
    expect(tenant(`arn:aws:iam::123456789012:user/${long}x`)).not.toBe(
      tenant(`arn:aws:iam::123456789012:user/${long}y`),
    );
    // Another partition is another principal, even with the same account and name.
    expect(tenant("arn:aws-cn:iam::123456789012:user/Orders")).not.toBe(
      tenant("arn:aws:iam::123456789012:user/Orders"),
    );
  });

  it("reads the caller of an HTTP API with payload format 2.0, which API Gateway puts under authorizer.iam", async () => {
    const response = await appFor("aws").request(
      "/who",
      {},
      {
        event: { requestContext: { authorizer: { iam: { userArn: "arn:aws:iam::111122223333:user/dev" } } } },
      },
    );
    expect(await response.json()).toEqual({ tenant: "111122223333-user-dev" });
  });

  it("reads the principal from API Gateway's request context on AWS, and never lets an API key pick the tenant", async () => {
    const app = appFor("aws");
    const role = await app.request(
      "/who",
      {},
      lambdaEnv({ userArn: "arn:aws:sts::111122223333:assumed-role/Billing/s" }),
    );
    expect(await role.json()).toEqual({ tenant: "111122223333-role-Billing" });
    const withKey = await app.request(
      "/who",
      { headers: { "x-api-key": "shared-key" } },
      lambdaEnv({ apiKeyId: "k1a2b3", userArn: "arn:aws:sts::111122223333:assumed-role/Billing/s" }),
    );
    expect(await withKey.json()).toEqual({ tenant: "111122223333-role-Billing" });
    const keyOnly = await app.request("/who", {}, lambdaEnv({ apiKeyId: "k1a2b3" }));
    expect(keyOnly.status).toBe(401);
    const anonymous = await app.request("/who", {}, lambdaEnv({}));
    expect(anonymous.status).toBe(401);
  });

  it("refuses federated-user sessions unless configured", async () => {
    const federated = lambdaEnv({ userArn: "arn:aws:sts::111122223333:federated-user/Bob" });
    expect((await appFor("aws").request("/who", {}, federated)).status).toBe(403);
    const allowed = await appFor("aws", { HOURGLASS_ALLOW_FEDERATED_USERS: "true" }).request(
      "/who",
      {},
      federated,
    );
    expect(await allowed.json()).toEqual({ tenant: "111122223333-fed-Bob" });
  });

  it("uses one default tenant locally when no tokens are configured", async () => {
    expect(await (await appFor("local").request("/who")).json()).toEqual({ tenant: "default" });
  });
});

describe("no two principals share a tenant (property)", () => {
  const account = fc.constantFrom("111122223333", "123456789012", "000000000001");
  const partition = fc.constantFrom("aws", "aws-cn", "aws-us-gov");
  // IAM names: letters, digits and + = , . @ _ -, up to 64 characters.
  const name = fc.string({
    unit: fc.constantFrom(..."AaBbOo019+=,.@_-".split("")),
    minLength: 1,
    maxLength: 70,
  });
  const principal = fc.record({
    partition,
    account,
    kind: fc.constantFrom("assumed-role", "user", "federated-user", "root"),
    name,
    session: fc.string({ unit: fc.constantFrom(..."abc.@-_=".split("")), minLength: 2, maxLength: 20 }),
    path: fc.constantFrom("", "team/", "a/b/"),
  });
  const arnOf = (p: {
    partition: string;
    account: string;
    kind: string;
    name: string;
    session: string;
    path: string;
  }) =>
    p.kind === "root"
      ? `arn:${p.partition}:iam::${p.account}:root`
      : p.kind === "user"
        ? `arn:${p.partition}:iam::${p.account}:user/${p.path}${p.name}`
        : p.kind === "assumed-role"
          ? `arn:${p.partition}:sts::${p.account}:assumed-role/${p.name}/${p.session}`
          : `arn:${p.partition}:sts::${p.account}:federated-user/${p.name}`;
  /** What makes two callers the same principal: the session and the user's path do not. */
  const identityOf = (p: { partition: string; account: string; kind: string; name: string }) =>
    p.kind === "root"
      ? `${p.partition}|${p.account}|root`
      : `${p.partition}|${p.account}|${p.kind}|${p.name}`;
  const headers = fc.dictionary(
    fc.constantFrom(
      "x-api-key",
      "authorization",
      "x-hourglass-tenant",
      "x-amz-security-token",
      "x-forwarded-for",
    ),
    fc.string({ maxLength: 30 }).filter((v) => /^[\x21-\x7e]*$/.test(v)),
  );

  it("holds for random principals, sessions, API keys and headers", async () => {
    const app = appFor("aws", { HOURGLASS_ALLOW_FEDERATED_USERS: "true" });
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({ principal, headers, apiKeyId: fc.option(fc.string({ minLength: 1, maxLength: 10 })) }),
          {
            minLength: 2,
            maxLength: 12,
          },
        ),
        async (callers) => {
          const seen = new Map<string, string>();
          const tenantOfIdentity = new Map<string, string>();
          for (const caller of callers) {
            const arn = arnOf(caller.principal);
            const response = await app.request(
              "/who",
              { headers: caller.headers },
              lambdaEnv({ userArn: arn, apiKeyId: caller.apiKeyId }),
            );
            expect(response.status).toBe(200);
            const { tenant: t } = (await response.json()) as { tenant: string };
            expect(t).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
            expect(principalOf(arn)).toBeDefined();
            const identity = identityOf(caller.principal);
            const owner = seen.get(t);
            if (owner !== undefined) expect(owner, `${t} shared`).toBe(identity);
            seen.set(t, identity);
            // The same principal always lands in the same tenant, whatever the session or headers.
            expect(tenantOfIdentity.get(identity) ?? t).toBe(t);
            tenantOfIdentity.set(identity, t);
          }
        },
      ),
      { numRuns: Number(process.env.FC_RUNS ?? 300) },
    );
  });
});
