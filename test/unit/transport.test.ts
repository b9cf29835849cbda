import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { memberOf, parseMember, shardOf } from "../../shared/engine/keys.ts";
import { MalformedMessageError } from "../../shared/model/errors.ts";
import {
  bundleOverheadBytes,
  decodeMessage,
  decodeMessages,
  encodeBundle,
  encodeMessage,
  eventsInBody,
  INLINE_PAYLOAD_LIMIT,
  withInlinePayload,
} from "../../shared/model/message.ts";
import { delaySecondsFor } from "../../shared/transport/transport.ts";

describe("delaySecondsFor", () => {
  it("is the whole seconds until due, within SQS's 0..900, and never makes a message late", () => {
    fc.assert(
      fc.property(fc.integer({ min: -10_000_000, max: 10_000_000 }), (ahead) => {
        const now = 1_800_000_000_000;
        const delay = delaySecondsFor(now + ahead, now);
        expect(Number.isInteger(delay)).toBe(true);
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(delay).toBeLessThanOrEqual(900);
        // Delivered no later than due: the worker waits out what is left.
        expect(now + delay * 1000).toBeLessThanOrEqual(Math.max(now, now + ahead));
      }),
    );
  });
});

describe("delaySecondsFor, delivered ahead", () => {
  it("makes a message visible aheadMs before due, within the whole second below, never more", () => {
    fc.assert(
      fc.property(fc.integer({ min: -100_000, max: 2_000_000 }), fc.nat(60_000), (ahead, aheadMs) => {
        const now = 1_800_000_000_000;
        const runAt = now + ahead;
        const delay = delaySecondsFor(runAt, now, aheadMs);
        const visibleAt = now + delay * 1000;
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(delay).toBeLessThanOrEqual(900);
        expect(visibleAt).toBeLessThanOrEqual(Math.max(now, runAt - aheadMs));
        // Not earlier than asked, unless the delay is at SQS's cap.
        if (delay < 900) expect(visibleAt).toBeGreaterThan(runAt - aheadMs - 1000);
      }),
    );
    expect(delaySecondsFor(1_000_000 + 9_500, 1_000_000, 4_000)).toBe(5);
    expect(delaySecondsFor(1_000_000 + 3_000, 1_000_000, 4_000)).toBe(0);
  });
});

describe("dispatch messages", () => {
  it("round-trip, with or without an inline payload", () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }),
        fc.nat(1023),
        fc.nat(),
        fc.nat(),
        fc.nat(100),
        fc.option(fc.json(), { nil: undefined }),
        (member, shard, gen, runAt, attempt, payload) => {
          const message = { member, shard, gen, runAt, attempt, ...(payload !== undefined && { payload }) };
          expect(decodeMessage(encodeMessage(message))).toEqual(message);
        },
      ),
    );
  });

  it("hold only characters SQS and fauxqs both take, whatever the payload holds, and decode to it", () => {
    // What fauxqs takes (SQS takes these and U+10000..U+10FFFF too): the body must match it.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the allowed set starts with tab, LF and CR.
    const refused = /[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD]/;
    const message = { member: "t/e1", shard: 0, gen: 1, runAt: 0, attempt: 0 };
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), fc.string({ unit: "binary" }), (text, more) => {
        const payload = JSON.stringify({ text, more, end: "\uFFFF\uFFFE😀" });
        const body = encodeMessage({ ...message, payload });
        expect(refused.test(body)).toBe(false);
        expect(decodeMessage(body)).toEqual({ ...message, payload });
      }),
    );
    expect(encodeMessage({ ...message, payload: '"😀"' })).toBe('["t/e1",0,1,0,0,"\\"\\ud83d\\ude00\\""]');
  });

  it("carry a payload up to the limit in UTF-8 bytes, and leave a bigger one to the journal", () => {
    const message = { member: "t/e1", shard: 0, gen: 1, runAt: 0, attempt: 0 };
    const ascii = "a".repeat(INLINE_PAYLOAD_LIMIT);
    expect(withInlinePayload(message, ascii)).toEqual({ ...message, payload: ascii });
    expect(withInlinePayload(message, `${ascii}a`)).toEqual(message);
    // Fewer UTF-16 units than the limit, but three bytes each: too big.
    expect(withInlinePayload(message, "€".repeat(INLINE_PAYLOAD_LIMIT / 2))).toEqual(message);
  });

  it.each([["{"], ["[]"], ['["a",1,2,3]'], ['["a",1,2,3,"x"]'], ["null"], ['{"member":"a"}']])(
    "rejects %s",
    (body) => {
      expect(() => decodeMessage(body)).toThrow(MalformedMessageError);
    },
  );
});

describe("bundles: several dispatch messages in one queue body", () => {
  const messageArb = fc.record(
    {
      member: fc.string({ minLength: 1 }),
      shard: fc.nat(1023),
      gen: fc.nat(),
      runAt: fc.nat(),
      attempt: fc.nat(100),
      payload: fc.json(),
    },
    { requiredKeys: ["member", "shard", "gen", "runAt", "attempt"] },
  );

  it("round-trip in order, say how many they hold without parsing, and cost what the sender counts", () => {
    fc.assert(
      fc.property(fc.array(messageArb, { minLength: 1, maxLength: 120 }), (messages) => {
        const encoded = messages.map(encodeMessage);
        const body = encodeBundle(encoded);
        expect(decodeMessages(body)).toEqual(messages);
        expect(eventsInBody(body)).toBe(messages.length);
        const own = encoded.reduce((sum, e) => sum + Buffer.byteLength(e, "utf8"), 0);
        expect(Buffer.byteLength(body, "utf8")).toBe(own + bundleOverheadBytes(messages.length));
      }),
    );
  });

  it("a single message stays in the format older workers read", () => {
    const message = { member: "t/e1", shard: 3, gen: 2, runAt: 10, attempt: 1, payload: "{}" };
    const body = encodeBundle([encodeMessage(message)]);
    expect(body).toBe(encodeMessage(message));
    expect(decodeMessage(body)).toEqual(message);
    expect(decodeMessages(body)).toEqual([message]);
    expect(eventsInBody(body)).toBe(1);
  });

  it.each([
    ['[2,["a",1,2,3,4]]'], // fewer messages than its count
    ['[1,["a",1,2,3,4]]'], // a bundle of one is written as the message itself
    ['[2,["a",1,2,3,4],{}]'],
    ['[2.5,["a",1,2,3,4],["b",1,2,3,4]]'],
    ['[2,["a",1,2,3,4],["b",1,2,3]]'],
    ["[]"],
  ])("rejects %s", (body) => {
    expect(() => decodeMessages(body)).toThrow(MalformedMessageError);
  });
});

describe("keys", () => {
  it("splits members back into tenant and id, whatever the id holds", () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/),
        fc.stringMatching(/^[A-Za-z0-9._:-]{1,128}$/),
        (tenant, id) => {
          expect(parseMember(memberOf(tenant, id))).toEqual({ tenant, id });
        },
      ),
    );
  });

  it("spreads members over every shard", () => {
    const counts = new Array(16).fill(0);
    for (let i = 0; i < 16_000; i++) counts[shardOf(memberOf("t", `event-${i}`), 16)]++;
    for (const count of counts) expect(count).toBeGreaterThan(700);
  });
});
