import { DynamoDBDocumentClient, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { describe, expect, it } from "vitest";
import { useApiServer } from "../support/server.ts";

/**
 * Where the dispatcher finds every type with limits (shared/limits/store.ts). It was one DynamoDB
 * item naming every tenant's types: about 6,000 PUTs of new type names by one tenant filled its
 * 400 KB, and from then on every tenant's first limits on any type answered 503 (invariant 7).
 * Each tenant's types now have an item of their own, capped by HOURGLASS_TENANT_LIMITED_TYPES.
 */
const TOKENS = { acme: "acme-token-0123456789", globex: "globex-token-0123456789" };
const as = (tenant: keyof typeof TOKENS) => ({ authorization: `Bearer ${TOKENS[tenant]}` });

const served = useApiServer({
  HOURGLASS_API_TOKENS: Object.entries(TOKENS)
    .map(([tenant, token]) => `${tenant}:${token}`)
    .join(","),
  HOURGLASS_TENANT_LIMITED_TYPES: "3",
});

describe("the index of types with limits", () => {
  it("caps each tenant's types with limits (422 naming type, nothing changed); another tenant is not touched", async () => {
    const put = (tenant: keyof typeof TOKENS, type: string, body: unknown) =>
      served.api.call("PUT", `/v1/types/${type}/limits`, body, as(tenant));
    for (const type of ["a.one", "a.two", "a.three"]) {
      expect((await put("acme", type, { maxConcurrency: 2 })).status).toBe(200);
    }
    const fourth = await put("acme", "a.four", { paused: true });
    expect(fourth.status).toBe(422);
    expect(fourth.type).toContain("application/problem+json");
    expect(fourth.json.errors[0].path).toBe("type");
    const unchanged = await served.api.call("GET", "/v1/types/a.four/limits", undefined, as("acme"));
    expect(unchanged.json).toEqual({ type: "a.four", paused: false, version: 0 });
    // A type already counted can be changed as often as wanted.
    expect((await put("acme", "a.two", { paused: true })).status).toBe(200);
    // The other tenant has its own allowance, whatever acme has done.
    for (const type of ["a.one", "g.two", "g.three"]) {
      expect((await put("globex", type, { ratePerSecond: 5 })).status).toBe(200);
    }

    const listed = await served.hg.flow.limits();
    const groups = listed.map((l) => `${l.tenant}/${l.type}`).sort();
    expect(groups).toEqual(
      ["acme/a.one", "acme/a.three", "acme/a.two", "globex/a.one", "globex/g.three", "globex/g.two"].sort(),
    );
    expect(listed.find((l) => l.tenant === "acme" && l.type === "a.two")?.paused).toBe(true);
  });

  it("still lists limits named only in the single index item of earlier versions", async () => {
    const doc = DynamoDBDocumentClient.from(served.hg.dynamo);
    const table = served.hg.config.tables.leases;
    await doc.send(
      new PutCommand({
        TableName: table,
        Item: {
          pk: "limits/legacy/old.type",
          tenant: "legacy",
          type: "old.type",
          paused: true,
          version: 4,
          updatedAt: 1,
        },
      }),
    );
    await doc.send(
      new UpdateCommand({
        TableName: table,
        Key: { pk: "limits-index/~all" },
        UpdateExpression: "ADD #g :g",
        ExpressionAttributeNames: { "#g": "groups" },
        ExpressionAttributeValues: { ":g": new Set(["legacy/old.type"]) },
      }),
    );
    // What the dispatcher reads each tick (FlowControl.limits caches it for a tick). Imported
    // here: shared/limits/model.ts must load after the app has extended zod with openapi().
    const { LimitsStore } = await import("../../shared/limits/store.ts");
    const legacy = (await new LimitsStore(served.hg.dynamo, table).list()).find((l) => l.tenant === "legacy");
    expect(legacy).toMatchObject({ type: "old.type", paused: true, version: 4 });
  });
});
