import { describe, expect, it } from "vitest";
import { z } from "zod";
import { NonRetryableError } from "../../shared/handlers/errors.ts";
import { defineHandler } from "../../shared/handlers/registry.ts";
import { CLOCK_SKEW_MARGIN_MS } from "../../shared/leases/lease-service.ts";
import { startRuntime } from "../../shared/local/runtime.ts";
import { runCli } from "../support/cli.ts";
import { eventually } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";
import { useApiServer } from "../support/server.ts";

/**
 * One rule for doing a thing twice (issue 35, item 2): a repeat of a completed action, or an
 * action whose end the thing has already reached, exits 0 and says "already <state>"; an action
 * that contradicts the thing's state exits 1 and names that state. Real server, real stack.
 */
const rec = recorder();
const fatal = defineHandler("test.fatal", z.object({}), async () => {
  throw new NonRetryableError("fails for good");
});
const served = useApiServer({}, { handlers: [rec.handler, fatal] });
const cli = (...args: string[]) => runCli(served.api.base, ...args);

/** Runs the CLI and expects exit 0, returning stdout. */
async function ok(...args: string[]) {
  const result = await cli(...args);
  expect(result.code, `${args.join(" ")}: ${result.stderr}`).toBe(0);
  return result.stdout;
}

/** Runs the CLI and expects exit 1, returning stderr. */
async function refused(...args: string[]) {
  const result = await cli(...args);
  expect(result.code, `${args.join(" ")}: ${result.stdout}`).toBe(1);
  return result.stderr;
}

describe("the CLI does a thing twice the same way everywhere", { timeout: 300_000 }, () => {
  it("events: cancel twice, cancel what died, replay twice", async () => {
    const event = JSON.parse(
      await ok("schedule", "--type", "test.record", "--in", "2h", "--payload", "{}", "--json"),
    );
    expect(await ok("cancel", event.id)).toContain(`cancelled ${event.id}`);
    expect(await ok("cancel", event.id)).toContain(`event ${event.id}: already cancelled`);
    // For scripts: the event as it stands, either way.
    expect(JSON.parse(await ok("cancel", event.id, "--json"))).toMatchObject({
      id: event.id,
      status: "cancelled",
    });

    const dead = JSON.parse(
      await ok(
        "schedule",
        "--type",
        "test.fatal",
        "--in",
        "0s",
        "--payload",
        "{}",
        "--max-attempts",
        "1",
        "--json",
      ),
    );
    const runtime = startRuntime(served.hg, { tickMs: 100 });
    try {
      await eventually(
        async () => (JSON.parse(await ok("get", dead.id, "--json")).status === "dead" ? true : undefined),
        60_000,
        "a dead letter",
      );
    } finally {
      await runtime.stop();
    }
    expect(await refused("cancel", dead.id)).toContain(`cannot cancel event ${dead.id}: it is dead`);
    // A refusal with --json is JSON too, naming the state.
    const refusal = await cli("cancel", dead.id, "--json");
    expect(refusal.code).toBe(1);
    expect(JSON.parse(refusal.stdout)).toMatchObject({ state: "dead" });
    expect(await ok("dlq", "replay", dead.id)).toContain(`replayed ${dead.id}`);
    expect(await ok("dlq", "replay", dead.id)).toMatch(
      new RegExp(`event ${dead.id}: already (scheduled|dispatched|running|retrying|succeeded)`),
    );
    const json = await cli("dlq", "replay", dead.id, "--json");
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout).id).toBe(dead.id);
  });

  it("reservations: confirm twice, cancel twice, and each after the other", async () => {
    await ok("stock", "receive", "mug", "10");
    const sold = JSON.parse(await ok("hold", "--item", "mug=1", "--for", "600", "--json"));
    expect(await ok("reservation", "confirm", sold.id)).toContain(`confirmed ${sold.id}`);
    expect(await ok("reservation", "confirm", sold.id)).toContain(
      `reservation ${sold.id}: already confirmed`,
    );
    expect(await ok("confirm", sold.id)).toContain("already confirmed");
    expect(await refused("reservation", "cancel", sold.id)).toContain(
      `cannot cancel reservation ${sold.id}: it is confirmed`,
    );
    expect(await refused("release", sold.id)).toContain("it is confirmed");

    const dropped = JSON.parse(await ok("hold", "--item", "mug=1", "--for", "600", "--json"));
    expect(await ok("reservation", "cancel", dropped.id)).toContain(`released ${dropped.id}`);
    expect(await ok("reservation", "cancel", dropped.id)).toContain(
      `reservation ${dropped.id}: already cancelled`,
    );
    expect(await refused("reservation", "confirm", dropped.id)).toContain(
      `cannot confirm reservation ${dropped.id}: it is cancelled`,
    );
    expect(JSON.parse(await ok("reservation", "get", dropped.id, "--json"))).toMatchObject({
      status: "cancelled",
    });
    expect(await ok("stock", "get", "mug")).toContain("available 9");
  });

  it("schedules: pause twice, resume twice, rm twice", async () => {
    await ok(
      "schedules",
      "create",
      "--id",
      "twice",
      "--cron",
      "0 9 * * *",
      "--type",
      "test.record",
      "--payload",
      "{}",
    );
    expect(await ok("schedules", "pause", "twice")).toContain("paused twice");
    expect(await ok("schedules", "pause", "twice")).toContain("schedule twice: already paused");
    expect(await ok("schedules", "resume", "twice")).toContain("resumed twice");
    expect(await ok("schedules", "resume", "twice")).toContain("schedule twice: already active");
    expect(await ok("schedules", "rm", "twice")).toContain("deleted twice");
    expect(await ok("schedules", "rm", "twice")).toContain("schedule twice: already deleted");
    expect((await cli("schedules", "get", "twice")).code).toBe(1);
  });

  it("leases: acquire twice, release twice, release after another owner took it", async () => {
    const first = JSON.parse(
      await ok("lease", "acquire", "nightly", "--owner", "vm", "--ttl", "60", "--json"),
    );
    expect(await ok("lease", "acquire", "nightly", "--owner", "vm", "--ttl", "60")).toContain(
      `nightly: already held by vm, now until`,
    );
    expect(await refused("lease", "acquire", "nightly", "--owner", "other")).toContain("held by vm");
    const token = String(first.token);
    expect(await ok("lease", "release", "nightly", "--owner", "vm", "--lease-token", token)).toContain(
      "released",
    );
    expect(await ok("lease", "release", "nightly", "--owner", "vm", "--lease-token", token)).toContain(
      "lease nightly: already released",
    );

    const short = JSON.parse(await ok("lease", "acquire", "brief", "--owner", "vm", "--ttl", "1", "--json"));
    await new Promise((done) => setTimeout(done, 1_000 + CLOCK_SKEW_MARGIN_MS + 200));
    const taken = JSON.parse(await ok("lease", "acquire", "brief", "--owner", "other", "--json"));
    expect(taken.token).toBe(short.token + 1);
    expect(
      await refused("lease", "release", "brief", "--owner", "vm", "--lease-token", String(short.token)),
    ).toContain(`cannot release lease brief: it is held by other (token ${taken.token})`);
  });
});
