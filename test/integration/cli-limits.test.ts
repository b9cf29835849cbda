import { describe, expect, it } from "vitest";
import { HourglassApiError, HourglassClient } from "../../shared/client/client.ts";
import { runCli } from "../support/cli.ts";
import { useApiServer } from "../support/server.ts";

/** `hourglass limits get|set|pause|resume TYPE` and the typed client methods behind them. */
const served = useApiServer({});
const cli = (...args: string[]) => runCli(served.api.base, ...args);

describe("limits from the CLI and the client", { timeout: 300_000 }, () => {
  it("sets, pauses, resumes and shows a type's limits; set keeps what it is not told to change", async () => {
    const set = await cli("limits", "set", "cli.type", "--rate", "50", "--max-concurrency", "4", "--json");
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({
      ratePerSecond: 50,
      maxConcurrency: 4,
      version: 1,
      etag: '"1"',
    });
    const paused = await cli("limits", "pause", "cli.type");
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.stdout).toContain("paused cli.type (version 2)");
    const shown = await cli("limits", "get", "cli.type", "--json");
    expect(JSON.parse(shown.stdout)).toMatchObject({
      paused: true,
      ratePerSecond: 50,
      maxConcurrency: 4,
      version: 2,
    });
    expect((await cli("limits", "resume", "cli.type")).code).toBe(0);
    const cleared = await cli("limits", "set", "cli.type", "--rate", "none", "--json");
    expect(JSON.parse(cleared.stdout)).toMatchObject({ paused: false, maxConcurrency: 4, version: 4 });
    expect(JSON.parse(cleared.stdout).ratePerSecond).toBeUndefined();
    // A stale --if-match fails, non-zero, and changes nothing.
    const stale = await cli("limits", "set", "cli.type", "--rate", "1", "--if-match", '"1"');
    expect(stale.code).not.toBe(0);
    expect(stale.stderr).toContain("412");
  });

  it("client: typeLimits carries the ETag, a stale ifMatch is a 412 HourglassApiError", async () => {
    const client = new HourglassClient({ url: served.api.base, retries: 0 });
    const { limits, etag } = await client.typeLimits("client.type");
    expect(limits).toEqual({ type: "client.type", paused: false, version: 0 });
    expect(etag).toBe('"0"');
    const written = await client.setTypeLimits(
      "client.type",
      { ratePerSecond: 5, burst: 5 },
      { ifMatch: etag },
    );
    expect(written.etag).toBe('"1"');
    const error = await client
      .setTypeLimits("client.type", { paused: true }, { ifMatch: etag })
      .catch((e) => e);
    expect(error).toBeInstanceOf(HourglassApiError);
    expect((error as HourglassApiError).status).toBe(412);
    expect((await client.pauseType("client.type")).limits).toMatchObject({
      paused: true,
      ratePerSecond: 5,
      version: 2,
    });
  });
});
