import { randomBytes } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { payloadJsonOf } from "../../shared/journal/item.ts";
import { PACK_THRESHOLD_BYTES, packPayload, unpackPayload } from "../../shared/journal/payload.ts";

describe("journal payload storage", () => {
  it("round-trips any JSON value exactly, packed or not", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const json = JSON.stringify(value) ?? "null";
        expect(unpackPayload(packPayload(json))).toBe(json);
      }),
      { numRuns: 300 },
    );
  });

  it("round-trips long and non-ASCII payloads", () => {
    for (const json of [
      JSON.stringify({ text: "é€😀 ".repeat(2_000) }),
      JSON.stringify({ lines: Array.from({ length: 200 }, (_, i) => ({ sku: `SKU-${i}`, qty: i })) }),
    ]) {
      const packed = packPayload(json);
      expect("payloadz" in packed).toBe(true);
      expect(unpackPayload(packed)).toBe(json);
    }
  });

  it("keeps small payloads as text, and incompressible ones as text too", () => {
    const small = JSON.stringify({ label: "x".repeat(PACK_THRESHOLD_BYTES - 20) });
    expect(packPayload(small)).toEqual({ payload: small });
    const noise = JSON.stringify({ data: randomBytes(600).toString("base64") });
    const packed = packPayload(noise);
    // base64 noise shrinks a little (6 bits per character), never below what was stored as text.
    const stored = "payloadz" in packed ? packed.payloadz.length : Buffer.byteLength(packed.payload);
    expect(stored).toBeLessThanOrEqual(Buffer.byteLength(noise));
    expect(unpackPayload(packed)).toBe(noise);
  });

  it("packs a typical 1 KB JSON payload to well under half its size", () => {
    const order = {
      lines: Array.from({ length: 8 }, (_, i) => ({
        sku: `SKU-${1000 + i}`,
        title: `Product number ${i} with a descriptive title`,
        unitPrice: { amount: 1999 + i, currency: "EUR" },
      })),
    };
    const json = JSON.stringify(order);
    expect(json.length).toBeGreaterThan(900);
    const packed = packPayload(json);
    if (!("payloadz" in packed)) throw new Error("expected a packed payload");
    expect(packed.payloadz.length).toBeLessThan(json.length / 2);
  });

  it("reads items written before packing existed, and refuses an item with neither field", () => {
    expect(payloadJsonOf({ payload: '{"a":1}' })).toBe('{"a":1}');
    expect(() => payloadJsonOf({})).toThrow(TypeError);
  });
});
