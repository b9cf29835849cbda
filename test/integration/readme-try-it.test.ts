import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { eventually } from "../support/harness.ts";
import { freePorts } from "../support/redis-servers.ts";

/**
 * The README's "Try it", run as a newcomer would: its shell blocks in order, each line as written,
 * against `npm start` on loopback (on the test stack's Redis, DynamoDB Local and fauxqs, with
 * tables, queue and keys of its own). Only the ports change (3000 and 8080 may be taken here), so
 * the README cannot drift from what works.
 */
const root = new URL("../../", import.meta.url);
const readme = readFileSync(new URL("README.md", root), "utf8");
const run = promisify(execFile);

const processes: ChildProcess[] = [];
const scratch = mkdtempSync(join(tmpdir(), "hg-try-it-"));
afterAll(async () => {
  for (const child of processes.reverse()) {
    if (!child.pid || child.exitCode !== null) continue;
    const exited = new Promise((done) => child.once("exit", done));
    process.kill(-child.pid, "SIGINT");
    await Promise.race([exited, sleep(30_000)]);
  }
  rmSync(scratch, { recursive: true, force: true });
}, 60_000);

/** The "Try it" section: from its heading to the next heading of any level. */
function tryIt(): string {
  const start = readme.indexOf("## Try it\n");
  expect(start).toBeGreaterThanOrEqual(0);
  const rest = readme.slice(start + 1);
  const end = rest.search(/\n#{2,6} /);
  return end < 0 ? rest : rest.slice(0, end);
}

function started(command: string, env: NodeJS.ProcessEnv, onOutput: (text: string) => void): ChildProcess {
  const child = spawn("bash", ["-c", command], {
    cwd: root.pathname,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env,
  });
  child.stdout!.on("data", (chunk: Buffer) => onOutput(chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => onOutput(chunk.toString()));
  processes.push(child);
  return child;
}

describe("the README's Try it, line by line", { timeout: 240_000 }, () => {
  it("shows the receiver it uses, and the payload of examples/webhook.json", () => {
    const snippet = /```js\n([\s\S]*?)```/.exec(readme)?.[1];
    // Line for line, blank lines aside (the formatter puts one after the file's imports).
    const lines = (text: string) => text.split("\n").filter((line) => line.trim() !== "");
    expect(lines(snippet ?? "")).toEqual(lines(readFileSync(new URL("examples/receiver.mjs", root), "utf8")));
    const blocks = [...tryIt().matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
    const body = /-d '(\{.*\})'/.exec(blocks[2] ?? "")?.[1];
    expect(body).toBeDefined();
    const payload = JSON.parse(readFileSync(new URL("examples/webhook.json", root), "utf8"));
    expect(JSON.parse(body!).payload).toEqual(payload);
  });

  it("starts Hourglass, then the receiver, then delivers a signed webhook to it", async () => {
    const blocks = [...tryIt().matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
    expect(blocks).toHaveLength(3);
    expect(blocks[0]!.trim()).toBe("npm start");
    const [http, hook] = (await freePorts(2)) as [number, number];
    const ports = (text: string) =>
      text.replaceAll("localhost:3000", `localhost:${http}`).replaceAll("8080", `${hook}`);

    const unique = `try${hook}`;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: String(http),
      HOURGLASS_DATA_DIR: join(scratch, "data"),
      HOURGLASS_KEY_PREFIX: unique,
      HOURGLASS_EVENTS_TABLE: `${unique}-events`,
      HOURGLASS_LEASES_TABLE: `${unique}-leases`,
      HOURGLASS_LEDGER_TABLE: `${unique}-ledger`,
      HOURGLASS_SCHEDULES_TABLE: `${unique}-schedules`,
      HOURGLASS_QUEUE_NAME: `${unique}-work`,
      HOURGLASS_LOCAL_WORKERS: "1",
    };
    for (const key of ["HOURGLASS_API_TOKENS", "HOURGLASS_WEBHOOK_SECRET", "NODE_OPTIONS", "VITEST"])
      delete env[key];

    // Terminal 1: `npm start`, until it says it is running.
    let hourglassLog = "";
    started(blocks[0]!.trim(), env, (text) => {
      hourglassLog += text;
    });
    await eventually(
      async () => hourglassLog.includes("Hourglass is running") || undefined,
      150_000,
      "npm start",
    );

    // Terminal 2: the receiver, as written, from a copy of examples/receiver.mjs on a free port.
    const receiverCopy = join(root.pathname, ".hourglass", `try-it-receiver-${hook}.mjs`);
    writeFileSync(
      receiverCopy,
      readFileSync(new URL("examples/receiver.mjs", root), "utf8").replace(
        "listen(8080)",
        `listen(${hook}, "127.0.0.1")`,
      ),
    );
    let receiverLog = "";
    const terminal2 = { ...process.env };
    for (const key of ["NODE_OPTIONS", "VITEST", "WEBHOOK_SECRET"]) delete terminal2[key];
    try {
      started(
        ports(blocks[1]!).replace("node examples/receiver.mjs", `node ${receiverCopy}`),
        terminal2,
        (text) => {
          receiverLog += text;
        },
      );
      // Unsigned, so refused: the receiver is listening.
      await eventually(
        async () =>
          (await fetch(`http://127.0.0.1:${hook}/`, { method: "POST", body: "x" })).status === 401 ||
          undefined,
        30_000,
        "the receiver",
      );

      // Terminal 3: schedule the webhook, read it back and the stats, every line as written.
      const { stdout } = await run("bash", ["-ec", ports(blocks[2]!)], {
        cwd: root.pathname,
        env: terminal2,
      });
      const read = JSON.parse(stdout.split("\n").find((line) => line.startsWith('{"id"'))!);
      expect(read).toMatchObject({ type: "webhook" });
      expect(stdout).toContain('"byStatus"');
      // "again a few seconds later": the same GET, until it has run.
      const get = blocks[2]!.split("\n").find((line) => line.includes("localhost:3000/v1/events/$ID"))!;
      const last = await eventually(
        async () => {
          const again = await run("bash", ["-ec", `ID=${read.id}; ${ports(get)}`], { env: terminal2 });
          const view = JSON.parse(again.stdout);
          return view.status === "succeeded" ? view : undefined;
        },
        60_000,
        "the event to succeed",
      );
      expect(last).toMatchObject({ id: read.id, attempts: 1 });
      expect(receiverLog).toContain(`verified ${read.id} {"hello":"world"}`);
    } finally {
      rmSync(receiverCopy, { force: true });
    }
  });
});
