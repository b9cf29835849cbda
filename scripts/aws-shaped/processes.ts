import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";
import type { Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";

/** A server run behind the guard: it ends with `stop()`, or when the process that started it ends. */
export interface GuardedProcess {
  readonly logFile: string;
  /** The server's exit code (128 + n for signal n), or null while it runs. */
  readonly exitCode: number | null;
  /** Resolves when the server (and its guard) have exited. */
  readonly exited: Promise<void>;
  stop(): Promise<void>;
}

/**
 * The guard of shared/local/stack.ts `launch`, with one change: it also ends when the server does,
 * so a server that cannot start (a port taken, a bad config line) is seen at once instead of after
 * a probe's timeout. The server runs in the background; a second background job holds the read end
 * of a pipe from this process and ends the server when the pipe closes (`stop()`, or the kernel
 * closing it when this process dies, `kill -9` included); the guard waits for the server and
 * reports its status. A non-interactive shell gives background jobs /dev/null as stdin, so the
 * pipe reaches the watcher on fd 3, which the server does not inherit.
 */
const GUARD = [
  "exec 3<&0",
  '"$@" 3<&- &',
  "server=$!",
  '{ read -r _ <&3; kill -TERM "$server" 2>/dev/null; } &',
  "watcher=$!",
  "exec 3<&-",
  'wait "$server"',
  "status=$?",
  'kill "$watcher" 2>/dev/null',
  'exit "$status"',
].join("\n");

/** How long `stop()` waits for a clean exit before it kills the whole process group. */
const STOP_GRACE_MS = 10_000;

/** Starts `command` behind the guard, its stdout and stderr appended to `logFile`. */
export function spawnGuarded(command: string, args: readonly string[], logFile: string): GuardedProcess {
  const out = openSync(logFile, "a");
  // In its own process group, so a terminal's Ctrl-C does not end the server under its clients
  // (stop() ends it after them), and so a forced stop can end the guard, watcher and server at once.
  const child: ChildProcess = spawn("sh", ["-c", GUARD, "sh", command, ...args], {
    stdio: ["pipe", out, out],
    detached: true,
  });
  closeSync(out);
  let exitCode: number | null = null;
  const exited = new Promise<void>((resolve) => {
    child.once("exit", (code, signal) => {
      exitCode = code ?? 128 + signalNumber(signal);
      resolve();
    });
    child.once("error", () => {
      exitCode ??= 127;
      resolve();
    });
  });
  child.stdin?.on("error", () => {});
  // Neither the pipe nor the child may keep this process alive.
  child.unref();
  (child.stdin as Socket | null)?.unref();
  return {
    logFile,
    get exitCode() {
      return exitCode;
    },
    exited,
    async stop() {
      if (exitCode !== null) return;
      // Closing the pipe is the stop signal: the watcher sends SIGTERM, the guard waits.
      child.stdin?.end();
      await Promise.race([exited, sleep(STOP_GRACE_MS)]);
      if (exitCode === null && child.pid) {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          // Already gone.
        }
        await exited;
      }
    },
  };
}

/** The last `lines` lines of a log file, for an error message; empty if it cannot be read. */
export function logTail(logFile: string, lines = 20): string {
  try {
    return readFileSync(logFile, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "";
  }
}

function signalNumber(signal: NodeJS.Signals | null): number {
  const numbers: Partial<Record<NodeJS.Signals, number>> = { SIGKILL: 9, SIGTERM: 15, SIGINT: 2 };
  return (signal && numbers[signal]) ?? 0;
}
