import { describe, expect, it } from "vitest";
import { z } from "zod";
import { NonRetryableError } from "../../shared/handlers/errors.ts";
import { defineHandler } from "../../shared/handlers/registry.ts";
import { startRuntime } from "../../shared/local/runtime.ts";
import { runCli, runCliOnTerminal } from "../support/cli.ts";
import { eventually } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";
import { useApiServer } from "../support/server.ts";

/**
 * Every CLI command that prints a table, piped and at a terminal with NO_COLOR=1: no escape
 * sequence in either (issue 35, item 1). Each must print a real table, so none passes by
 * printing nothing.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching the escape character is the point.
const ANSI = /\x1b\[/;
const rec = recorder();
const fatal = defineHandler("test.fatal", z.object({}), async () => {
  throw new NonRetryableError("fails for good");
});
const served = useApiServer({}, { handlers: [rec.handler, fatal] });
const cli = (...args: string[]) => runCli(served.api.base, ...args);

describe("CLI tables without colour", { timeout: 300_000 }, () => {
  it("prints every table without escape sequences when piped and with NO_COLOR=1", async () => {
    const scheduled = await cli(
      "schedule",
      "--type",
      "test.record",
      "--in",
      "2h",
      "--payload",
      "{}",
      "--json",
    );
    const event = JSON.parse(scheduled.stdout);
    const dead = JSON.parse(
      (
        await cli(
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
        )
      ).stdout,
    );
    const runtime = startRuntime(served.hg, { tickMs: 100 });
    try {
      await eventually(
        async () => ((await cli("get", dead.id, "--json")).stdout.includes('"dead"') ? true : undefined),
        60_000,
        "a dead letter",
      );
    } finally {
      await runtime.stop();
    }
    expect((await cli("stock", "receive", "lamp", "4")).code).toBe(0);
    const held = JSON.parse((await cli("hold", "--item", "lamp=1", "--for", "600", "--json")).stdout);
    const schedule = [
      "schedules",
      "create",
      "--id",
      "tables-one",
      "--cron",
      "0 9 * * *",
      "--type",
      "test.record",
      "--payload",
      "{}",
    ];
    expect((await cli(...schedule)).code).toBe(0);

    const tables: string[][] = [
      ["get", event.id],
      ["ls"],
      ["stats"],
      ["dlq", "ls"],
      ["stock", "ledger", "lamp"],
      ["reservation", "get", held.id],
      ["schedules", "ls"],
      ["schedules", "get", "tables-one"],
      ["limits", "get", "test.record"],
      ["limits", "set", "test.record", "--rate", "100"],
    ];
    for (const args of tables) {
      const piped = await cli(...args);
      expect(piped.code, `${args.join(" ")}: ${piped.stderr}`).toBe(0);
      expect(piped.stdout, args.join(" ")).toMatch(/│/);
      expect(piped.stdout, `${args.join(" ")} piped`).not.toMatch(ANSI);
      const terminal = await runCliOnTerminal({ NO_COLOR: "1" }, served.api.base, ...args);
      expect(terminal, args.join(" ")).toMatch(/│/);
      expect(terminal, `${args.join(" ")} with NO_COLOR=1`).not.toMatch(ANSI);
    }
    // A person at a terminal still gets colour, from the same helper (never red).
    const coloured = await runCliOnTerminal({ NO_COLOR: "" }, served.api.base, "schedules", "ls");
    expect(coloured).toMatch(ANSI);
    expect(coloured).not.toContain("\x1b[31m");
  });
});
