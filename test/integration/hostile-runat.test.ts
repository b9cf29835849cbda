import { describe, expect, it } from "vitest";
import { encodeBody } from "../../shared/engine/body.ts";
import { ScriptCode } from "../../shared/engine/codes.ts";
import { memberOf } from "../../shared/engine/keys.ts";
import { recorder } from "../support/recorder.ts";
import { useApiServer } from "../support/server.ts";

/**
 * Invariant 7: a runAt no index can hold never reaches Redis, whatever path it takes (create,
 * batch, reschedule), and a past runAt inside the sane range means "due now".
 */
const rec = recorder();
// Each HTTP test has its own tenant, named by its bearer token.
const served = useApiServer(
  { HOURGLASS_API_TOKENS: "hostile-old:token-old-0123456789,hostile-past:token-past-0123456789" },
  { handlers: [rec.handler] },
);
const as = (token: string) => ({ authorization: `Bearer ${token}` });

async function indexHolds(tenant: string, id: string) {
  return (await served.hg.index.inspect(memberOf(tenant, id))) !== undefined;
}

describe("runAt bounds", () => {
  it("POST with a runAt before 2000-01-01 (1969-12-31T23:59:59Z) is a 422 on runAt and nothing is indexed", async () => {
    for (const runAt of ["1969-12-31T23:59:59Z", "1999-12-31T23:59:59.999Z", "0001-01-01T00:00:00Z"]) {
      const id = `old-${runAt.slice(0, 4)}`;
      const response = await served.api.call(
        "POST",
        "/v1/events",
        {
          id,
          type: "test.record",
          payload: {},
          runAt,
        },
        as("token-old-0123456789"),
      );
      expect(response.status, runAt).toBe(422);
      expect(response.json.errors[0].path).toBe("runAt");
      expect(await indexHolds("hostile-old", id)).toBe(false);
    }
  });

  it("a batch item with a runAt before 2000 fails alone; the others are scheduled", async () => {
    const results = await served.hg.events.scheduleBatch("hostile-batch", [
      { id: "ok", type: "test.record", payload: {}, delaySeconds: 3_600 },
      { id: "bad", type: "test.record", payload: {}, runAt: "1969-12-31T23:59:59Z" },
    ]);
    expect(results[0]!.ok).toBe(true);
    expect(results[1]!.ok).toBe(false);
    expect(await indexHolds("hostile-batch", "bad")).toBe(false);
  });

  it("a past runAt after 2000 is due now: 201 with overdue: true", async () => {
    const response = await served.api.call(
      "POST",
      "/v1/events",
      { type: "test.record", payload: {}, runAt: "2001-01-01T00:00:00Z" },
      as("token-past-0123456789"),
    );
    expect(response.status).toBe(201);
    expect(response.json.overdue).toBe(true);
  });

  it("PATCH with a runAt before 2000 is a 422 and the event keeps its time", async () => {
    const tenant = "hostile-patch";
    await served.hg.events.schedule(tenant, { id: "p", type: "test.record", payload: {}, delaySeconds: 600 });
    const before = await served.hg.events.get(tenant, "p");
    await expect(
      served.hg.events.reschedule(tenant, "p", { runAt: "1969-12-31T23:59:59Z" }),
    ).rejects.toMatchObject({ name: "EventValidationError" });
    expect((await served.hg.events.get(tenant, "p")).runAt).toBe(before.runAt);
  });
});

describe("an index entry with a negative time (written before the bounds existed)", () => {
  it("start and claim read a negative runAt in meta instead of failing on it", async () => {
    const { index } = served.hg;
    const member = memberOf("hostile-negative", "neg");
    const shard = index.shardOf(member);
    await index.setEpoch(shard, "1");
    const now = Date.now();
    // A due-now event whose meta holds a negative time, as the 1969 runAt used to write it.
    const codes = await index.schedule(
      [{ member, runAt: -1_000, body: encodeBody({ type: "test.record" }, { inline: {} }) }],
      now,
      now + 5_000,
      60_000,
    );
    expect(codes).toEqual([ScriptCode.DISPATCHED]);
    const started = await index.startMany(
      [
        { member, shard, gen: 1, runAt: -1_000, attempt: 0 },
        { member: memberOf("hostile-negative", "absent"), shard, gen: 1, runAt: 0, attempt: 0 },
      ],
      now,
      60_000,
    );
    expect(started.map((s) => s.code)).toEqual([ScriptCode.OK, ScriptCode.NOT_FOUND]);
    // The run lease runs out: the next claim redelivers it rather than failing the shard.
    const claimed = await index.claim(shard, now + 120_000, now + 120_000, 100, 60_000);
    expect(claimed.epochMissing).toBe(false);
    if (!claimed.epochMissing) {
      expect(claimed.claimed.find((c) => c.member === member)).toMatchObject({ runAt: -1_000, attempt: 1 });
    }
  });
});
