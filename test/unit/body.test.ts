import { describe, expect, it } from "vitest";
import { decodeBody, encodeBody } from "../../shared/engine/body.ts";

describe("event bodies in the index", () => {
  const policy = { maxAttempts: 3, backoff: { strategy: "fixed" as const, delayMs: 1_000 } };

  it("round-trips the type, the policy and the payload, inline or in the journal", () => {
    for (const body of [{ type: "a.b" }, { type: "a.b", ...policy }]) {
      for (const inline of [{ data: "x\ny" }, null, 0, "", [1, { n: "\n" }]]) {
        expect(decodeBody(encodeBody(body, { inline }))).toEqual({
          ...body,
          payload: inline,
          payloadInJournal: false,
        });
      }
      expect(decodeBody(encodeBody(body, "journal"))).toEqual({
        ...body,
        payload: undefined,
        payloadInJournal: true,
      });
    }
    expect(decodeBody(encodeBody({ type: "a.b" }, { inline: undefined }))).toMatchObject({
      payload: undefined,
      payloadInJournal: false,
    });
  });

  it("stores no JSON around a payload nor a marker for the journal: the bytes are Redis memory", () => {
    expect(encodeBody({ type: "bench.noop" }, { inline: { data: "x" } })).toBe('bench.noop\n\n{"data":"x"}');
    expect(encodeBody({ type: "bench.noop" }, "journal")).toBe("bench.noop\n\n");
  });

  it("reads bodies of the layout before (the payload in `p`, `j` for the journal)", () => {
    expect(decodeBody('a.b\n{"p":{"n":1},"m":3}')).toEqual({
      type: "a.b",
      payload: { n: 1 },
      payloadInJournal: false,
      maxAttempts: 3,
      backoff: undefined,
    });
    expect(decodeBody('a.b\n{"j":1}')).toMatchObject({ payload: undefined, payloadInJournal: true });
  });
});
