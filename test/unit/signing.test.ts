import { hkdfSync, randomBytes } from "node:crypto";
import fc from "fast-check";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { deriveTenantSecret, sign, signatureHeaders, tenantSecrets } from "../../shared/handlers/signing.ts";

/**
 * Hourglass signs with node:crypto, not with the `standardwebhooks` package it promises receivers
 * can verify with: these hold its signatures to that package's, byte for byte, and its cached
 * secret derivation to the HKDF it caches.
 */
const secretArb = fc
  .tuple(fc.uint8Array({ minLength: 1, maxLength: 128 }), fc.boolean())
  .map(([bytes, prefixed]) => `${prefixed ? "whsec_" : ""}${Buffer.from(bytes).toString("base64")}`);
const idArb = fc.string({ minLength: 1, maxLength: 40, unit: "grapheme" });
const bodyArb = fc.oneof(
  fc.string({ maxLength: 300, unit: "grapheme" }),
  // Lone surrogates too: both sides must encode them as UTF-8 replacement characters alike.
  fc.string({ maxLength: 50, unit: "binary" }),
  fc.json({ maxDepth: 3 }),
);
// Before 1970 too: both sides floor negative milliseconds to the second below.
const timeArb = fc.integer({ min: -62_135_596_800_000, max: 4_102_444_800_000 }).map((ms) => new Date(ms));

describe("webhook signatures", () => {
  it("equal the standardwebhooks package's for any secret, id, time and body (unicode included)", () => {
    fc.assert(
      fc.property(secretArb, idArb, timeArb, bodyArb, (secret, id, timestamp, body) => {
        const expected = new Webhook(secret).sign(id, timestamp, body);
        expect(sign(secret, id, timestamp, body)).toBe(expected);
        // Again, with the key bytes from the cache.
        expect(sign(secret, id, timestamp, body)).toBe(expected);
      }),
      { numRuns: 500 },
    );
  });

  it("verify with the package, with every secret in an overlap, and fail with another secret", () => {
    const master = randomBytes(32).toString("hex");
    const secrets = tenantSecrets(
      master,
      "acme",
      { generation: 2, previousUntil: Date.now() + 60_000 },
      Date.now(),
    );
    const body = JSON.stringify({ order: "ü-42", lines: [1, 2, 3] });
    const headers = signatureHeaders(secrets, "evt_1", new Date(), body);
    expect(headers["webhook-signature"].split(" ")).toHaveLength(2);
    for (const secret of [secrets.current, secrets.previous!.secret])
      expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    const stranger = deriveTenantSecret(master, "other", 2);
    expect(() => new Webhook(stranger).verify(body, headers)).toThrow(/No matching signature/);
  });
  it("refuses a secret the package would refuse rather than sign with what Node's lenient decoder makes of it", () => {
    for (const secret of ["whsec_", "whsec_abc", "whsec_a b=", "whsec_-_-_"]) {
      expect(() => new Webhook(secret).sign("evt", new Date(), "x")).toThrow();
      expect(() => sign(secret, "evt", new Date(), "x")).toThrow(/standard base64/);
    }
  });
});

describe("tenant secret derivation", () => {
  it("is HKDF-SHA256 of the master, per tenant and generation, the same when asked again", () => {
    const master = randomBytes(16).toString("hex");
    const direct = (tenant: string, generation: number) =>
      `whsec_${Buffer.from(hkdfSync("sha256", master, "hourglass/webhook-signing/v1", `${tenant}\u0000${generation}`, 32)).toString("base64")}`;
    for (const [tenant, generation] of [
      ["acme", 0],
      ["acme", 1],
      ["beta", 0],
      ["acme", 0],
    ] as const) {
      expect(deriveTenantSecret(master, tenant, generation)).toBe(direct(tenant, generation));
    }
    expect(deriveTenantSecret(master, "acme", 0)).not.toBe(deriveTenantSecret(master, "acme", 1));
    // Another master never gets this one's cached secrets.
    expect(deriveTenantSecret(`${master}x`, "acme", 0)).not.toBe(deriveTenantSecret(master, "acme", 0));
  });
});
