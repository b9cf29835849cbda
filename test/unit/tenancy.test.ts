import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../shared/config.ts";
import { type TenantEnv, tenancy, tenantFromArn } from "../../shared/http/tenancy.ts";

/** On AWS the tenant comes from API Gateway's request context: the IAM principal, or the API key. */
function appFor(mode: "local" | "aws") {
  const config = loadConfig({ HOURGLASS_MODE: mode, HOURGLASS_WEBHOOK_SECRET: "x".repeat(32) });
  const app = new Hono<TenantEnv>();
  app.use("*", tenancy(config));
  app.get("/who", (c) => c.json({ tenant: c.get("tenant") }));
  return app;
}

const lambdaEnv = (identity: Record<string, string | null>) => ({ event: { requestContext: { identity } } });

describe("tenancy", () => {
  it("names a tenant after the caller's IAM role or user", () => {
    expect(tenantFromArn("arn:aws:sts::123456789012:assumed-role/OrdersService/i-0abc")).toBe(
      "123456789012-OrdersService",
    );
    expect(tenantFromArn("arn:aws:iam::123456789012:user/alice")).toBe("123456789012-alice");
    expect(tenantFromArn("arn:aws:iam::123456789012:user/dept/bob.smith")).toBe("123456789012-bob_smith");
  });

  it("reads the principal from API Gateway's request context on AWS", async () => {
    const app = appFor("aws");
    const role = await app.request(
      "/who",
      {},
      lambdaEnv({ userArn: "arn:aws:sts::111122223333:assumed-role/Billing/s" }),
    );
    expect(await role.json()).toEqual({ tenant: "111122223333-Billing" });
    const key = await app.request(
      "/who",
      {},
      lambdaEnv({ apiKeyId: "k1a2b3", userArn: "arn:aws:iam::1:user/x" }),
    );
    expect(await key.json()).toEqual({ tenant: "key-k1a2b3" });
    const anonymous = await app.request("/who", {}, lambdaEnv({}));
    expect(anonymous.status).toBe(401);
  });

  it("uses one default tenant locally when no tokens are configured", async () => {
    expect(await (await appFor("local").request("/who")).json()).toEqual({ tenant: "default" });
  });
});
