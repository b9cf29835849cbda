import { type ChildProcess, spawn } from "node:child_process";
import { appendFileSync, closeSync, mkdirSync, openSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import { dynamoDbLocalArgs, ensureDynamoDbLocalJar } from "../../shared/local/dynamodb-local.ts";

/**
 * The soak's own servers and Hourglass processes. Each can be killed, stopped and started again
 * alone. Nothing here touches the shared stack on 6379/8000/4566: every port is a free one and
 * every data directory is the run's own.
 */

export const LOCAL_CREDENTIALS = { accessKeyId: "local", secretAccessKey: "local" };

/**
 * A server process (redis-server, DynamoDB Local) behind a small `sh` guard that prints the
 * server's pid, holds a pipe from this process and ends the server when the pipe closes, so the
 * server dies with the soak however the soak ends (kill -9 included), yet can be signalled
 * directly (SIGSTOP, SIGKILL) by its own pid.
 */
const GUARD =
  'log=$1; shift; "$@" >>"$log" 2>&1 </dev/null & server=$!; echo "$server"; read -r _ || true; kill -CONT "$server" 2>/dev/null; kill -TERM "$server" 2>/dev/null; wait "$server"';

export class GuardedServer {
  private guard: ChildProcess | undefined;
  pid = 0;

  constructor(
    readonly name: string,
    private readonly command: string,
    private readonly args: readonly string[],
    private readonly logFile: string,
    private readonly cwd: string,
  ) {}

  async start(): Promise<void> {
    const guard = spawn("sh", ["-c", GUARD, "sh", this.logFile, this.command, ...this.args], {
      stdio: ["pipe", "pipe", "ignore"],
      detached: true,
      cwd: this.cwd,
    });
    guard.on("error", () => {});
    guard.stdin?.on("error", () => {});
    this.guard = guard;
    this.pid = await new Promise<number>((resolve, reject) => {
      let out = "";
      guard.stdout!.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes("\n")) resolve(Number(out.trim()));
      });
      guard.once("exit", () => reject(new Error(`${this.name} did not start; see ${this.logFile}`)));
    });
  }

  signal(signal: NodeJS.Signals): void {
    try {
      process.kill(this.pid, signal);
    } catch {
      // Already gone.
    }
  }

  /** Closes the pipe: the guard resumes the server if stopped, sends SIGTERM and waits for it. */
  async stop(): Promise<void> {
    const guard = this.guard;
    if (!guard || guard.exitCode !== null || guard.signalCode !== null) return;
    const exited = new Promise((done) => guard.once("exit", done));
    guard.stdin?.end();
    await Promise.race([exited, sleep(15_000)]);
    if (guard.exitCode === null && guard.signalCode === null) {
      this.signal("SIGKILL");
      try {
        process.kill(-guard.pid!, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
  }

  /** kill -9 of the server itself, then the guard is let go. */
  async kill(): Promise<void> {
    this.signal("SIGCONT");
    this.signal("SIGKILL");
    await this.stop();
  }
}

export function redisServer(port: number, runDir: string): GuardedServer {
  const dir = join(runDir, "redis");
  mkdirSync(dir, { recursive: true });
  return new GuardedServer(
    "redis",
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no"],
    join(runDir, "logs", "redis.log"),
    runDir,
  );
}

export function dynamoDbLocal(port: number, runDir: string, cacheDir: string): GuardedServer {
  const home = ensureDynamoDbLocalJar(cacheDir);
  const dbPath = join(runDir, "dynamodb");
  mkdirSync(dbPath, { recursive: true });
  return new GuardedServer(
    "dynamodb",
    "java",
    dynamoDbLocalArgs(home, port, dbPath),
    join(runDir, "logs", "dynamodb.log"),
    runDir,
  );
}

/**
 * A Node process (an Hourglass part or the SQS emulator). It ends itself when orphaned (it polls
 * its parent pid). Exits the soak did not cause are reported through `onExit`.
 */
export class NodeProcess {
  private child: ChildProcess | undefined;
  private expected = false;
  /** It printed its "ready" line (role.ts does once it serves, ticks or polls). */
  ready = false;

  constructor(
    readonly name: string,
    private readonly args: () => { args: string[]; env: NodeJS.ProcessEnv },
    private readonly logFile: string,
    private readonly onExit: (code: number | null, signal: string | null, expected: boolean) => void,
  ) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  start(): void {
    const { args, env } = this.args();
    const out = openSync(this.logFile, "a");
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", out], env });
    closeSync(out);
    this.ready = false;
    // Its output goes to its log; the first line that says "ready" marks it up.
    child.stdout?.on("data", (chunk: Buffer) => {
      appendFileSync(this.logFile, chunk);
      if (chunk.toString().includes("ready")) this.ready = true;
    });
    this.expected = false;
    child.on("error", () => {});
    child.once("exit", (code, signal) => this.onExit(code, signal, this.expected));
    this.child = child;
  }

  private async end(signal: NodeJS.Signals, graceMs: number): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    this.expected = true;
    const exited = new Promise((done) => child.once("exit", done));
    child.kill(signal);
    await Promise.race([exited, sleep(graceMs)]);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGKILL");
      await exited;
    }
  }

  kill(): Promise<void> {
    return this.end("SIGKILL", 5_000);
  }

  stop(): Promise<void> {
    return this.end("SIGTERM", 8_000);
  }
}

export async function waitUntil(
  what: string,
  probe: () => Promise<boolean>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await probe()) return;
    await sleep(200);
  }
  throw new Error(`${what} did not answer within ${timeoutMs / 1000} s`);
}

export async function redisAnswers(url: string): Promise<boolean> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on("error", () => {});
  try {
    await client.connect();
    return (await client.ping()) === "PONG";
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

export async function httpAnswers(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    await response.arrayBuffer();
    return response.status < 500;
  } catch {
    return false;
  }
}

export { dynamoAnswers, sqsAnswers } from "../../shared/local/stack.ts";
