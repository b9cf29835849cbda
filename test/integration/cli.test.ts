import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli, runCliOnTerminal, runCliWith } from "../support/cli.ts";
import { recorder } from "../support/recorder.ts";
import { useApiServer } from "../support/server.ts";

/** The `hourglass` CLI, run as a child process against the running server. */
const rec = recorder();
const dir = mkdtempSync(join(tmpdir(), "hg-cli-"));

const cli = (...args: string[]) => runCli(served.api.base, ...args);

const served = useApiServer({}, { handlers: [rec.handler] });

// Each test runs the CLI several times as a child process; under load one run can take seconds.
describe("hourglass CLI", { timeout: 300_000 }, () => {
  it("schedules from a payload file, shows, lists, moves and cancels", async () => {
    writeFileSync(join(dir, "body.json"), JSON.stringify({ label: "from-file" }));
    const scheduled = await cli(
      "schedule",
      "--type",
      "test.record",
      "--in",
      "2h",
      "--payload",
      `@${join(dir, "body.json")}`,
      "--json",
    );
    expect(scheduled.code).toBe(0);
    const event = JSON.parse(scheduled.stdout);
    expect(event.payload).toEqual({ label: "from-file" });
    expect(Date.parse(event.runAt) - Date.now()).toBeGreaterThan(7_100_000);

    const shown = await cli("get", event.id);
    expect(shown.stdout).toContain(event.id);
    expect(shown.stdout).toContain("scheduled");

    const listed = await cli("ls", "--status", "scheduled");
    expect(listed.stdout).toContain(event.id);
    expect(listed.stdout).toMatch(/│|\|/);

    const target = new Date(Date.now() + 30 * 86_400_000);
    target.setUTCMilliseconds(0);
    const moved = await cli("reschedule", event.id, "--at", target.toISOString(), "--json");
    expect(JSON.parse(moved.stdout).runAt).toBe(target.toISOString());

    expect((await cli("cancel", event.id)).stdout).toContain(`cancelled ${event.id}`);
    const again = await cli("reschedule", event.id, "--in", "5m");
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("409");
  });

  it("explains bad input and exits non-zero", async () => {
    const both = await cli(
      "schedule",
      "--type",
      "test.record",
      "--payload",
      "{}",
      "--in",
      "2h",
      "--at",
      "2030-01-01T00:00:00Z",
    );
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("exactly one of --in and --at");
    const unknown = await cli("schedule", "--type", "no.such", "--in", "1m", "--payload", "{}");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("type: unknown event type");
    expect((await cli("schedule", "--type", "test.record", "--in", "soon")).code).not.toBe(0);
    expect((await cli("get", "missing-event")).stderr).toContain("404");
  });

  it("prints stats and dead letters, as JSON for scripts", async () => {
    const stats = JSON.parse((await cli("stats", "--json")).stdout);
    expect(typeof stats.indexSize).toBe("number");
    expect(JSON.parse((await cli("dlq", "ls", "--json")).stdout)).toEqual([]);
  });

  it("imports NDJSON with a progress bar, and a second run creates nothing new", async () => {
    const lines = Array.from({ length: 1_200 }, (_, i) =>
      JSON.stringify({ type: "test.record", payload: { label: `n${i}` }, delaySeconds: 3_600 }),
    );
    lines.splice(7, 0, "{broken json");
    lines.push(JSON.stringify({ type: "no.such", payload: {}, delaySeconds: 60 }));
    const file = join(dir, "events.ndjson");
    writeFileSync(file, `${lines.join("\n")}\n`);

    const first = await cli("import", file, "--progress");
    expect(first.code).toBe(1);
    expect(first.stdout).toContain("created 1200, already there 0, failed 2");
    expect(first.stdout).toContain("line 8: 400");
    expect(first.stderr).toContain("importing [");

    const second = await cli("import", file, "--json");
    const summary = JSON.parse(second.stdout);
    expect(summary.created).toBe(0);
    expect(summary.existing).toBe(1_200);
    expect(summary.failed).toHaveLength(2);
  });
});

/** Any ANSI escape sequence (colours, bold). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching the escape character is the point.
const ANSI = /\x1b\[/;
const STACK = /\n\s+at /;

describe("hourglass CLI, for a newcomer", { timeout: 300_000 }, () => {
  it("says nothing answers at the URL, and how to start it, when no server runs there", async () => {
    const closed = await new Promise<number>((done) => {
      const server = createServer().listen(0, "127.0.0.1", () => {
        const { port } = server.address() as { port: number };
        server.close(() => done(port));
      });
    });
    const result = await runCli(`http://127.0.0.1:${closed}`, "ls");
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(new RegExp(`nothing answers at http://127\\.0\\.0\\.1:${closed}`));
    expect(result.stderr).toContain("npm start");
    expect(result.stderr).toContain("--url");
    expect(result.stderr).not.toMatch(STACK);
  });

  it("explains a missing payload file, and a missing payload, without a stack", async () => {
    const missing = await cli(
      "schedule",
      "--type",
      "webhook",
      "--in",
      "1m",
      "--payload",
      "@no-such-file.json",
    );
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain("no file no-such-file.json");
    expect(missing.stderr).not.toMatch(STACK);

    const none = await cli("schedule", "--type", "webhook", "--in", "1m");
    expect(none.code).not.toBe(0);
    expect(none.stderr).toContain("required option '--payload <json|@file>' not specified");
    // It says what a webhook payload holds, and so does --help.
    expect(none.stderr).toContain('webhook: { "url"');
    expect(none.stderr).not.toContain("null");
    const help = await cli("schedule", "--help");
    expect(help.stdout).toContain('webhook: { "url"');
    expect(help.stdout).toMatch(/--payload <json\|@file>\s+\(required\)/);
    expect(help.stdout).not.toContain("default: null");
  });

  it("schedules the README's example payload from examples/", async () => {
    const result = await cli(
      "schedule",
      "--type",
      "webhook",
      "--in",
      "2h",
      "--payload",
      "@examples/webhook.json",
      "--json",
    );
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).payload.url).toMatch(/^http/);
    await cli("cancel", JSON.parse(result.stdout).id);
  });

  it("suggests the flag meant for a typo of a required flag too", async () => {
    const result = await cli("schedule", "--typ", "webhook", "--in", "1m", "--payload", "{}");
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("unknown option '--typ'");
    expect(result.stderr).toContain("Did you mean --type?");
  });

  it("prints each field error once", async () => {
    const result = await cli("schedule", "--type", "webhook", "--in", "1m", "--payload", '{"body":1}');
    expect(result.code).toBe(1);
    const line = result.stderr.split("\n").find((l) => l.includes("payload.url"));
    expect(line).toBeDefined();
    expect(result.stderr.split("payload.url").length - 1).toBe(1);
  });

  it("marks --lease-token required, and renews a lease", async () => {
    const help = await cli("lease", "release", "--help");
    expect(help.stdout).toMatch(/--lease-token <n>\s+\(required\)/);
    const name = `cli-renew-${Date.now()}`;
    const grant = JSON.parse(
      (await cli("lease", "acquire", name, "--owner", "me", "--ttl", "120", "--json")).stdout,
    );
    const renewed = await cli(
      "lease",
      "renew",
      name,
      "--owner",
      "me",
      "--lease-token",
      String(grant.token),
      "--ttl",
      "600",
      "--json",
    );
    expect(renewed.code).toBe(0);
    expect(Date.parse(JSON.parse(renewed.stdout).expiresAt)).toBeGreaterThan(Date.parse(grant.expiresAt));
    const released = await cli(
      "lease",
      "release",
      name,
      "--owner",
      "me",
      "--lease-token",
      String(grant.token),
    );
    expect(released.stdout).toContain("released");
  });

  it("colours tables only at a terminal, never with NO_COLOR, and never red", async () => {
    await cli("schedule", "--type", "test.record", "--in", "2h", "--payload", "{}");
    const piped = await cli("ls", "--limit", "2");
    expect(piped.stdout).toMatch(/│/);
    expect(piped.stdout).not.toMatch(ANSI);

    const terminal = await runCliOnTerminal({ NO_COLOR: "" }, served.api.base, "ls", "--limit", "2");
    expect(terminal).toMatch(ANSI);
    expect(terminal).not.toContain("\x1b[31m");
    const noColor = await runCliOnTerminal({ NO_COLOR: "1" }, served.api.base, "ls", "--limit", "2");
    expect(noColor).toMatch(/│/);
    expect(noColor).not.toMatch(ANSI);
  });

  it("prints stats per type as a table, not JSON", async () => {
    await cli("schedule", "--type", "test.record", "--in", "2h", "--payload", "{}");
    const result = await runCliWith({ NO_COLOR: "1" }, served.api.base, "stats");
    expect(result.code).toBe(0);
    expect(result.stdout).not.toContain("{");
    expect(result.stdout).toMatch(/│ type\s+│ .*scheduled/);
    expect(result.stdout).toMatch(/│ test\.record\s+│\s+\d+/);
  });
});
