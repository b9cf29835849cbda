import { type ChildProcess, fork } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "../logger.ts";
import { WorkerStartError } from "./errors.ts";
import { READY, STOP } from "./worker-protocol.ts";

export interface WorkerPoolOptions {
  /** Worker processes to keep running. */
  readonly count: number;
  /** The script each one runs (`worker-main.ts` for `npm start`; the benchmark has its own). */
  readonly entry: string;
  readonly args?: readonly string[];
  /** @default this process's environment */
  readonly env?: NodeJS.ProcessEnv;
  /** Node's own flags for each worker (a TypeScript loader, `--cpu-prof`). @default this process's */
  readonly execArgv?: readonly string[];
  /** Messages a worker sends that are not the pool's own. */
  readonly onMessage?: (message: unknown, slot: number) => void;
  /** How long a worker may take to finish what it holds before it is killed. @default 40 s */
  readonly stopTimeoutMs?: number;
  /** First wait before a crashed worker is started again; doubled while it keeps crashing young. @default 1 s */
  readonly restartDelayMs?: number;
}

/** A worker that ran at least this long before it died is restarted after the first delay again. */
const HEALTHY_AFTER_MS = 10_000;
const MAX_RESTART_DELAY_MS = 30_000;

interface Slot {
  child: ChildProcess | undefined;
  startedAt: number;
  delayMs: number;
  timer: NodeJS.Timeout | undefined;
}

/**
 * The local runtime's worker processes, as Lambda runs the worker in many instances: each polls
 * the same queue with its own event loop, so the worker path gets every core of the machine.
 *
 * - A worker that dies (a crash, `kill -9`) is started again, after a delay that grows while it
 *   keeps dying young. What it had received comes back after the queue's visibility timeout, and
 *   the index's run lease decides whether it runs again: the same rules as a lost Lambda instance.
 * - Each runs in a process group of its own, so the terminal's Ctrl-C reaches only the runtime,
 *   which stops the workers in order (`stop`): each finishes what it received and deletes it.
 * - A worker stops by itself when this process goes away (its IPC channel closes), so none is left
 *   behind however the runtime ends.
 */
export class WorkerPool {
  private readonly slots: Slot[];
  private stopping = false;
  /** Workers started again after dying. */
  restarts = 0;

  constructor(
    private readonly options: WorkerPoolOptions,
    private readonly logger: Logger,
  ) {
    this.slots = Array.from({ length: options.count }, () => ({
      child: undefined,
      startedAt: 0,
      delayMs: options.restartDelayMs ?? 1_000,
      timer: undefined,
    }));
  }

  /** The running workers' process ids. */
  get pids(): number[] {
    return this.slots.flatMap((s) => (s.child?.pid && s.child.exitCode === null ? [s.child.pid] : []));
  }

  /**
   * Starts every worker and waits until each polls; fails (and stops them all) if one dies first.
   * A `stop` meanwhile ends them as they boot, and the start then resolves: nothing failed.
   */
  async start(): Promise<void> {
    try {
      await Promise.all(this.slots.map((_, i) => this.spawn(i)));
    } catch (error) {
      await this.stop();
      throw error;
    }
  }

  /** Stops every worker: each finishes and deletes what it holds, or is killed after the timeout. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(
      this.slots.map(async (slot) => {
        clearTimeout(slot.timer);
        const child = slot.child;
        if (!child || child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((done) => child.once("exit", done));
        if (child.connected) child.send(STOP, () => {});
        else child.kill("SIGTERM");
        await Promise.race([exited, sleep(this.options.stopTimeoutMs ?? 40_000)]);
        if (child.exitCode === null && child.signalCode === null) {
          child.kill("SIGKILL");
          await exited;
        }
      }),
    );
  }

  private spawn(i: number): Promise<void> {
    const slot = this.slots[i]!;
    const child = fork(this.options.entry, [...(this.options.args ?? [])], {
      env: this.options.env ?? process.env,
      execArgv: [...(this.options.execArgv ?? process.execArgv)],
      detached: true,
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    slot.child = child;
    slot.startedAt = Date.now();
    return new Promise((ready, failed) => {
      let isReady = false;
      child.on("message", (message) => {
        if (message === READY) {
          isReady = true;
          ready();
        } else {
          this.options.onMessage?.(message, i);
        }
      });
      child.on("error", (error) => this.logger.warn("worker process error", { slot: i, error }));
      child.once("exit", (code, signal) => {
        const exit = signal ? `signal ${signal}` : `code ${code}`;
        // One the pool stopped while it booted (it ends before it is ready) did not fail to start.
        if (!isReady) this.stopping ? ready() : failed(new WorkerStartError(i, exit));
        if (this.stopping || !isReady) return;
        this.restart(i, exit);
      });
    });
  }

  private restart(i: number, exit: string): void {
    const slot = this.slots[i]!;
    slot.delayMs =
      Date.now() - slot.startedAt >= HEALTHY_AFTER_MS
        ? (this.options.restartDelayMs ?? 1_000)
        : Math.min(slot.delayMs * 2, MAX_RESTART_DELAY_MS);
    this.logger.warn("worker process exited; starting another", { slot: i, exit, inMs: slot.delayMs });
    slot.timer = setTimeout(() => {
      if (this.stopping) return;
      this.restarts++;
      // A replacement that dies before it is ready is restarted the same way, later.
      this.spawn(i).catch((error) => {
        if (!this.stopping) this.logger.warn("worker process did not start", { slot: i, error });
        if (!this.stopping) this.restart(i, "before it was ready");
      });
    }, slot.delayMs);
  }
}
