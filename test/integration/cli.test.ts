import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.ts";
import { recorder } from "../support/recorder.ts";
import { useApiServer } from "../support/server.ts";

/** The `hourglass` CLI, run as a child process against the running server. */
const rec = recorder();
const dir = mkdtempSync(join(tmpdir(), "hg-cli-"));

const cli = (...args: string[]) => runCli(served.api.base, ...args);

const served = useApiServer({}, { handlers: [rec.handler] });

describe("hourglass CLI", () => {
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
    const both = await cli("schedule", "--type", "test.record", "--in", "2h", "--at", "2030-01-01T00:00:00Z");
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
