import { describe, expect, it } from "vitest";
import { startRuntime } from "../../shared/local/runtime.ts";
import { runCli } from "../support/cli.ts";
import { eventually } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";
import { useApiServer } from "../support/server.ts";

/** What a newcomer meets in the CLI's second hour (issue 35, item 4). Real server, real stack. */
const rec = recorder();
const served = useApiServer({}, { handlers: [rec.handler] });
const cli = (...args: string[]) => runCli(served.api.base, ...args);

describe("the CLI's usage, listings and empty answers", { timeout: 300_000 }, () => {
  it("answers a bad option value with the one error and that command's usage line, not the whole help", async () => {
    const bad = await cli("schedule", "--type", "test.record", "--in", "soon", "--payload", "{}");
    expect(bad.code).toBe(1);
    const lines = bad.stderr.trim().split("\n");
    expect(lines[0]).toBe(
      `error: option '--in <duration>' argument 'soon' is invalid. a duration such as "90s", "15m", "2h" or "3d"`,
    );
    expect(lines[1]).toBe("usage: hourglass schedule [options]");
    expect(lines).toHaveLength(3);
    expect(bad.stderr).not.toContain("--max-attempts");
    const nested = await cli("schedules", "next", "x", "--count", "many");
    expect(nested.stderr).toContain("usage: hourglass schedules next [options] <id>");
    expect(nested.stderr).not.toContain("Options:");
  });

  it("marks --type required in schedules create --help, and says so when it is missing", async () => {
    const help = await cli("schedules", "create", "--help");
    expect(help.stdout).toMatch(/--type <type>\s+\(required\)/);
    const missing = await cli("schedules", "create", "--cron", "0 9 * * *", "--payload", "{}");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("required option '--type <type>' not specified");
  });

  it("says no dead letters when there are none", async () => {
    const empty = await cli("dlq", "ls");
    expect(empty.code).toBe(0);
    expect(empty.stdout.trim()).toBe("no dead letters");
  });

  it("shows what flow control holds back (heldBy) in stats, per type and in all", async () => {
    expect((await cli("limits", "pause", "test.record")).code).toBe(0);
    await cli("schedule", "--type", "test.record", "--in", "0s", "--payload", "{}");
    const runtime = startRuntime(served.hg, { tickMs: 100 });
    try {
      await eventually(
        async () => {
          const stats = JSON.parse((await cli("stats", "--json")).stdout);
          return (stats.heldBy.paused ?? 0) > 0 ? true : undefined;
        },
        60_000,
        "an event held back by the pause",
      );
    } finally {
      await runtime.stop();
    }
    const stats = await cli("stats");
    expect(stats.stdout).toContain("held back by flow control (heldBy): paused 1");
    expect(stats.stdout).toMatch(/│ heldBy\s+│/);
    expect(stats.stdout).toMatch(/│ test\.record\s+│.*│ paused 1\s+│/);
    expect((await cli("limits", "resume", "test.record")).code).toBe(0);
  });

  it("lists one schedule's occurrences with ls --schedule-id, and shows a reservation", async () => {
    const create = [
      "schedules",
      "create",
      "--id",
      "every-second",
      "--rate",
      "1 second",
      "--type",
      "test.record",
    ];
    expect((await cli(...create, "--payload", "{}")).code).toBe(0);
    await cli("schedule", "--type", "test.record", "--in", "2h", "--payload", "{}");
    const runtime = startRuntime(served.hg, { tickMs: 200 });
    let listed: { id: string }[] = [];
    try {
      listed = await eventually(
        async () => {
          const page = JSON.parse((await cli("ls", "--schedule-id", "every-second", "--json")).stdout);
          return page.length > 0 ? page : undefined;
        },
        60_000,
        "an occurrence",
      );
    } finally {
      await runtime.stop();
      await cli("schedules", "rm", "every-second");
    }
    // Only that schedule's occurrences: their ids derive from the schedule's.
    for (const event of listed) expect(event.id).toContain("every-second");
    expect(JSON.parse((await cli("ls", "--schedule-id", "no-such", "--json")).stdout)).toEqual([]);

    expect((await cli("stock", "receive", "lamp", "2")).code).toBe(0);
    const held = JSON.parse((await cli("hold", "--item", "lamp=2", "--for", "600", "--json")).stdout);
    const shown = await cli("reservation", "get", held.id);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/│ status\s+│ held/);
    expect(shown.stdout).toMatch(/│ items\s+│ lamp=2/);
  });
});
