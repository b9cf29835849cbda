import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { signatureHeaders } from "../../shared/handlers/signing.ts";
import { useApiServer } from "../support/server.ts";

/**
 * Rotations that follow each other (security.md, threat 3). A second rotation during the first's
 * overlap made the first secret stop signing at once, although GET /v1/webhook-secret had promised
 * it until its `expiresAt`: a receiver still holding only that secret refused every webhook.
 */
const TOKEN = "initech-token-0123456789";
const as = { authorization: `Bearer ${TOKEN}` };
const served = useApiServer({ HOURGLASS_API_TOKENS: `initech:${TOKEN}` });

describe("webhook secret rotation", () => {
  it("keeps every rotated-away secret signing until its own overlap ends; at most 4 at once", async () => {
    const rotate = (overlapSeconds: number) =>
      served.api.call("POST", "/v1/webhook-secret/rotate", { overlapSeconds }, as);
    const s0 = (await served.api.call("GET", "/v1/webhook-secret", undefined, as)).json.secret as string;
    const first = await rotate(3600);
    const second = await rotate(600);
    expect(second.status).toBe(200);
    expect(second.json.previous.secret).toBe(first.json.secret);
    expect(second.json.older).toEqual([{ secret: s0, expiresAt: first.json.previous.expiresAt }]);

    // Read back from DynamoDB, as the worker does, and signed with all three.
    const secrets = await served.hg.signing.signingSecretsFor("initech");
    const body = JSON.stringify({ n: 1 });
    const headers = signatureHeaders(secrets, "evt-rotation", new Date(), body);
    expect(headers["webhook-signature"].split(" ")).toHaveLength(3);
    for (const secret of [s0, first.json.secret, second.json.secret]) {
      expect(new Webhook(secret).verify(body, headers)).toEqual({ n: 1 });
    }

    // Two more, and four earlier secrets sign: the next rotation waits until the earliest of them ends.
    expect((await rotate(600)).status).toBe(200);
    expect((await rotate(600)).status).toBe(200);
    const refused = await rotate(600);
    expect(refused.status).toBe(409);
    expect(refused.type).toContain("application/problem+json");
    // The earliest to stop is the first secret of a 600 s overlap, not s0 (an hour).
    expect(refused.json.retryAt).toBe(second.json.previous.expiresAt);
    const after = await served.api.call("GET", "/v1/webhook-secret", undefined, as);
    expect(after.json.generation).toBe(4);
    expect(after.json.older.map((entry: { secret: string }) => entry.secret)).toContain(s0);
  });
});
