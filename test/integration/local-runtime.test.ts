import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { freePorts } from "../support/redis-servers.ts";

/**
 * `npm start` as a user runs it, on ports of its own (never the shared stack's), stopped every way
 * a runtime can end. Whatever it started must end with it, and a normal stop must read clean.
 */

const BOOT_TIMEOUT_MS = 150_000;

interface Started {
  readonly npm: ChildProcess;
  readonly ports: { http: number; redis: number; dynamodb: number; sqs: number };
  readonly dataDir: string;
  output(): string;
  exited: Promise<number | null>;
}

const running: Started[] = [];

afterEach(async () => {
  // A failed test must not leave its runtime behind: end the whole group it runs in.
  for (const s of running.splice(0)) {
    for (const pid of descendants(s.npm.pid!)) kill(pid, "SIGKILL");
    kill(-s.npm.pid!, "SIGKILL");
  }
});

function listening(port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = createConnection({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      done(true);
    });
    socket.once("error", () => done(false));
  });
}

/** Environment of a user's shell: none of the endpoints the test setup points at the shared stack. */
function userEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  for (const key of ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_SQS"])
    delete env[key];
  delete env.NODE_OPTIONS;
  delete env.VITEST;
  return env;
}

/** `npm start` in a process group of its own, as a terminal would run it. */
async function start(extra: Record<string, string> = {}): Promise<Started> {
  // Distinct: four ports taken one after another once gave the API and Redis the same one.
  const [http, redis, dynamodb, sqs] = (await freePorts(4)) as [number, number, number, number];
  const ports = { http, redis, dynamodb, sqs };
  const dataDir = mkdtempSync(join(tmpdir(), "hg-runtime-"));
  let text = "";
  const npm = spawn("npm", ["start"], {
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: userEnv({
      PORT: String(ports.http),
      HOURGLASS_REDIS_URL: `redis://127.0.0.1:${ports.redis}`,
      HOURGLASS_DYNAMODB_PORT: String(ports.dynamodb),
      HOURGLASS_SQS_PORT: String(ports.sqs),
      HOURGLASS_DATA_DIR: dataDir,
      ...extra,
    }),
  });
  npm.stdout!.on("data", (chunk: Buffer) => {
    text += chunk.toString();
  });
  npm.stderr!.on("data", (chunk: Buffer) => {
    text += chunk.toString();
  });
  const exited = new Promise<number | null>((done) => npm.once("exit", (code) => done(code)));
  const started: Started = { npm, ports, dataDir, output: () => text, exited };
  running.push(started);
  return started;
}

async function untilRunning(s: Started): Promise<void> {
  const deadline = Date.now() + BOOT_TIMEOUT_MS;
  while (!s.output().includes("Hourglass is running")) {
    if (s.npm.exitCode !== null) throw new Error(`npm start exited early:\n${s.output()}`);
    if (Date.now() > deadline) throw new Error(`npm start did not come up:\n${s.output()}`);
    await sleep(250);
  }
  const health = await fetch(`http://127.0.0.1:${s.ports.http}/health`);
  expect(health.status).toBe(200);
}

/** Every process below `root`, from /proc (Linux). */
function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // The command name may hold spaces and parentheses: fields resume after the last ")".
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // Gone while we looked.
    }
  }
  const found: number[] = [];
  const walk = (pid: number) => {
    for (const child of children.get(pid) ?? []) {
      found.push(child);
      walk(child);
    }
  };
  walk(root);
  return found;
}

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").trim();
  } catch {
    return "";
  }
}

function alive(pid: number): boolean {
  try {
    // A zombie has exited; only its parent has not collected it yet.
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

function kill(pid: number, signal: NodeJS.Signals) {
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone.
  }
}

/** Waits until none of `pids` runs; returns the command lines of those still running after that. */
async function leftovers(pids: readonly number[], withinMs = 30_000): Promise<string[]> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline && pids.some(alive)) await sleep(200);
  return pids.filter(alive).map((pid) => `${pid}: ${commandOf(pid)}`);
}

/** The runtime's processes: npm, node, and the stand-ins it started (Redis, DynamoDB Local, fauxqs). */
function tree(s: Started): number[] {
  const pids = [s.npm.pid!, ...descendants(s.npm.pid!)];
  const commands = pids.map(commandOf).join("\n");
  expect(commands).toContain("redis-server");
  expect(commands).toContain("DynamoDBLocal.jar");
  // The SQS stand-in is a process of its own, started by node itself (never npx).
  expect(commands).toMatch(/\/node [^\n]*shared\/local\/fauxqs-server\.mjs \d+/);
  expect(commands).not.toMatch(/npx|npm exec/);
  expect(commands).toContain("scripts/start.ts");
  // The worker runs in processes of its own (HOURGLASS_LOCAL_WORKERS, one per CPU by default),
  // started by node itself: they are among the processes that must end.
  expect(commands).toMatch(/\/node [^\n]*shared\/local\/worker-main\.ts /);
  return pids;
}

function nodePid(s: Started): number {
  const pid = descendants(s.npm.pid!).find((p) => commandOf(p).includes("scripts/start.ts"));
  expect(pid).toBeDefined();
  return pid!;
}

describe("npm start", { timeout: 240_000 }, () => {
  it("checks its configuration before it starts anything: one line, non-zero, nothing left", async () => {
    const s = await start({ HOURGLASS_TICK_MS: "abc" });
    const code = await s.exited;
    expect(code).not.toBe(0);
    const lines = s
      .output()
      .split("\n")
      .filter((line) => line.trim() && !line.startsWith(">"));
    expect(lines).toEqual([expect.stringMatching(/^hourglass: HOURGLASS_TICK_MS: .*whole number/)]);
    // Nothing was started: no Redis on its port, no logs or data in its folder.
    for (const port of [s.ports.redis, s.ports.dynamodb, s.ports.sqs])
      expect(await listening(port)).toBe(false);
    expect(readdirSync(s.dataDir)).toEqual([]);
  });

  it("stops cleanly on Ctrl-C (SIGINT to its process group): one line, and every child ends", async () => {
    const s = await start();
    await untilRunning(s);
    const pids = tree(s);
    const before = s.output();
    kill(-s.npm.pid!, "SIGINT");
    expect(await s.exited).toBe(0);
    expect(await leftovers(pids)).toEqual([]);
    const stopLines = s.output().slice(before.length).trim().split("\n");
    expect(stopLines).toEqual([expect.stringMatching(/INFO +stopped \(SIGINT\)$/)]);
    expect(s.output()).not.toMatch(/Unhandled error event|dispatcher tick failed|ECONNREFUSED|\n\s+at /);
    // Nor, on Node 20, the AWS SDK's Node 22 notice at start (the README explains it instead).
    expect(s.output()).not.toContain("NodeVersionSupportWarning");
    expect(existsSync(join(s.dataDir, "redis"))).toBe(true);
  });

  it("ends every child when only npm is told to stop (SIGTERM to npm's pid)", async () => {
    const s = await start();
    await untilRunning(s);
    const pids = tree(s);
    kill(s.npm.pid!, "SIGTERM");
    await s.exited;
    expect(await leftovers(pids)).toEqual([]);
    expect(s.output()).not.toMatch(/Unhandled error event|dispatcher tick failed/);
  });

  it("ends every child when npm dies without passing anything on (SIGKILL to npm)", async () => {
    const s = await start();
    await untilRunning(s);
    const pids = tree(s);
    kill(s.npm.pid!, "SIGKILL");
    expect(await leftovers(pids)).toEqual([]);
  });

  it("ends Redis, DynamoDB Local and fauxqs when the runtime itself is killed (SIGKILL to node)", async () => {
    const s = await start();
    await untilRunning(s);
    const pids = tree(s);
    kill(nodePid(s), "SIGKILL");
    expect(await leftovers(pids)).toEqual([]);
    // No server is left answering on any of the stack's ports.
    for (const port of [s.ports.redis, s.ports.dynamodb, s.ports.sqs])
      expect(await listening(port)).toBe(false);
  });
});
