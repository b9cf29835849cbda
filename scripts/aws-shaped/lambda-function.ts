import { type ChildProcess, fork } from "node:child_process";
import { randomUUID } from "node:crypto";
import { createWriteStream, type WriteStream } from "node:fs";
import { fileURLToPath } from "node:url";
import { LambdaInvocationError } from "./errors.ts";
import type { FunctionSpec } from "./template.ts";

const HOST = fileURLToPath(new URL("./lambda-host.mjs", import.meta.url));

export interface LambdaFunctionOptions {
  readonly spec: FunctionSpec;
  readonly name: string;
  readonly arn: string;
  /** The process's whole environment: the template's variables plus what Lambda's runtime sets. */
  readonly environment: Readonly<Record<string, string>>;
  /** Where every environment's stdout and stderr go (one file per function, as one log group). */
  readonly logFile: string;
  /**
   * Execution environments this machine may run at once. A local bound, not an AWS one: past it an
   * invocation waits its turn. The template's reserved concurrency, when lower, throttles instead.
   */
  readonly maxEnvironments: number;
  /** Told each environment's pid as it starts, so a reaper can end it if this process dies. */
  readonly onSpawn?: (pid: number) => void;
  /**
   * Stop the process between invocations (SIGSTOP), as Lambda freezes an idle environment: its
   * timers and background work do not run until the next invocation. @default true
   */
  readonly freeze?: boolean;
}

/** Lambda's init phase may take 10 s; past it the init runs again inside the invocation's timeout. */
const INIT_MS = 10_000;
/** Synchronous invocations: at most 6 MB in, 6 MB out (Lambda quotas). */
const PAYLOAD_LIMIT_BYTES = 6 * 1024 * 1024;

interface Environment {
  readonly child: ChildProcess;
  busy: boolean;
  alive: boolean;
}

export interface FunctionStats {
  readonly environments: number;
  readonly busy: number;
  readonly coldStarts: number;
  readonly invocations: number;
  readonly throttles: number;
  readonly errors: number;
}

/**
 * One Lambda function: execution environments (each a process running `lambda-host.mjs` on the
 * function's bundle) created on demand, one invocation each at a time, killed past the template's
 * timeout (its next invocation starts cold, as on Lambda), frozen while idle.
 */
export class LambdaFunction {
  private readonly environments: Environment[] = [];
  private readonly waiting: (() => void)[] = [];
  private readonly log: WriteStream;
  private coldStarts = 0;
  private invocations = 0;
  private throttles = 0;
  private errors = 0;
  private stopped = false;

  constructor(private readonly options: LambdaFunctionOptions) {
    this.log = createWriteStream(options.logFile, { flags: "a" });
    // Every environment's stdout and stderr pipe into it: one pair of listeners each, by design.
    this.log.setMaxListeners(0);
  }

  get name(): string {
    return this.options.name;
  }

  /** How many may run at once: the reserved concurrency, when the template sets one. */
  get concurrencyLimit(): number {
    return Math.min(
      this.options.spec.reservedConcurrency ?? Number.POSITIVE_INFINITY,
      this.options.maxEnvironments,
    );
  }

  stats(): FunctionStats {
    return {
      environments: this.environments.length,
      busy: this.environments.filter((e) => e.busy).length,
      coldStarts: this.coldStarts,
      invocations: this.invocations,
      throttles: this.throttles,
      errors: this.errors,
    };
  }

  /**
   * Runs one invocation. Rejects with LambdaInvocationError: `throttled` at the reserved concurrency,
   * `init` when the bundle does not load, `error` when the handler throws, `timeout`, `crash`.
   */
  async invoke(event: unknown): Promise<unknown> {
    const size = Buffer.byteLength(JSON.stringify(event ?? null));
    if (size > PAYLOAD_LIMIT_BYTES) {
      throw new LambdaInvocationError(
        this.name,
        "error",
        "RequestTooLargeException",
        `Request must be smaller than ${PAYLOAD_LIMIT_BYTES} bytes for the InvokeFunction operation (got ${size})`,
      );
    }
    const environment = await this.acquire();
    this.invocations++;
    try {
      return await this.run(environment, event);
    } catch (error) {
      this.errors++;
      throw error;
    } finally {
      environment.busy = false;
      if (environment.alive && this.options.freeze !== false) environment.child.kill("SIGSTOP");
      this.waiting.shift()?.();
    }
  }

  private wakeAll(): void {
    for (const resume of this.waiting.splice(0)) resume();
  }

  /** Ends every environment; invocations in flight end as crashes. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wakeAll(); // invocations waiting for an environment end as "stopping", not never
    await Promise.all(this.environments.map((environment) => this.kill(environment)));
    await new Promise((done) => this.log.end(done));
  }

  private async acquire(): Promise<Environment> {
    for (;;) {
      if (this.stopped)
        throw new LambdaInvocationError(this.name, "crash", "Stopped", "the harness is stopping");
      const idle = this.environments.find(
        (environment) => !environment.busy && environment.alive && environment.child.connected,
      );
      if (idle) {
        idle.busy = true;
        if (this.options.freeze !== false) idle.child.kill("SIGCONT");
        return idle;
      }
      const reserved = this.options.spec.reservedConcurrency;
      if (reserved !== undefined && this.environments.length >= reserved) {
        this.throttles++;
        throw new LambdaInvocationError(
          this.name,
          "throttled",
          "TooManyRequestsException",
          `Rate Exceeded (reserved concurrency ${reserved})`,
        );
      }
      if (this.environments.length < this.options.maxEnvironments) return this.start();
      await new Promise<void>((resume) => this.waiting.push(resume));
    }
  }

  private async start(): Promise<Environment> {
    const { spec } = this.options;
    const child = fork(
      HOST,
      [spec.assetDir, spec.handler, this.name, this.options.arn, String(spec.memoryMb)],
      {
        cwd: spec.assetDir,
        env: { ...this.options.environment },
        // Never the parent's flags (tsx): the bundle loads under plain Node, as on Lambda. Lambda's
        // runtime sizes the heap to the function's memory the same way.
        execArgv: [`--max-old-space-size=${Math.floor(spec.memoryMb * 0.9)}`],
        stdio: ["ignore", "pipe", "pipe", "ipc"],
      },
    );
    child.stdout?.pipe(this.log, { end: false });
    child.stderr?.pipe(this.log, { end: false });
    const environment: Environment = { child, busy: true, alive: true };
    this.environments.push(environment);
    this.coldStarts++;
    if (child.pid) this.options.onSpawn?.(child.pid);
    // A channel that closes under a send (the process died just then) must not crash the harness.
    child.on("error", () => {
      environment.alive = false;
    });
    child.once("exit", () => {
      environment.alive = false;
      const at = this.environments.indexOf(environment);
      if (at >= 0) this.environments.splice(at, 1);
      this.waiting.shift()?.();
    });
    const ready = await new Promise<{ ok: true } | { ok: false; errorType: string; errorMessage: string }>(
      (settle) => {
        child.on("message", (message: { type?: string; errorType?: string; errorMessage?: string }) => {
          if (message.type === "ready") settle({ ok: true });
          if (message.type === "init-error")
            settle({
              ok: false,
              errorType: message.errorType ?? "Error",
              errorMessage: message.errorMessage ?? "",
            });
        });
        child.once("exit", (code, signal) =>
          settle({
            ok: false,
            errorType: "Runtime.ExitError",
            errorMessage: `exited (${signal ?? code}) during init`,
          }),
        );
        // Lambda's init phase, then its one retry within the invocation's timeout.
        setTimeout(
          () =>
            settle({
              ok: false,
              errorType: "Sandbox.Timedout",
              errorMessage: `init did not finish within ${INIT_MS / 1000} s plus the ${spec.timeoutSeconds} s timeout`,
            }),
          INIT_MS + spec.timeoutSeconds * 1000,
        ).unref();
      },
    );
    if (!ready.ok) {
      await this.kill(environment);
      throw new LambdaInvocationError(this.name, "init", ready.errorType, ready.errorMessage);
    }
    return environment;
  }

  private run(environment: Environment, event: unknown): Promise<unknown> {
    const { child } = environment;
    const id = randomUUID();
    const timeoutMs = this.options.spec.timeoutSeconds * 1000;
    return new Promise((resolve, reject) => {
      const finish = () => {
        clearTimeout(timer);
        child.off("message", onMessage);
        child.off("exit", onExit);
      };
      const onMessage = (message: {
        type?: string;
        id?: string;
        ok?: boolean;
        value?: unknown;
        errorType?: string;
        errorMessage?: string;
      }) => {
        if (message.type !== "result" || message.id !== id) return;
        finish();
        const size = message.ok ? Buffer.byteLength(JSON.stringify(message.value ?? null)) : 0;
        if (size > PAYLOAD_LIMIT_BYTES)
          reject(
            new LambdaInvocationError(
              this.name,
              "error",
              "Function.ResponseSizeTooLarge",
              `Response payload size (${size} bytes) exceeded maximum allowed payload size (${PAYLOAD_LIMIT_BYTES} bytes).`,
            ),
          );
        else if (message.ok) resolve(message.value);
        else
          reject(
            new LambdaInvocationError(
              this.name,
              "error",
              message.errorType ?? "Error",
              message.errorMessage ?? "",
            ),
          );
      };
      const onExit = (code: number | null, signal: string | null) => {
        finish();
        reject(
          new LambdaInvocationError(this.name, "crash", "Runtime.ExitError", `exited (${signal ?? code})`),
        );
      };
      // Lambda ends an environment that runs past its timeout; the next invocation starts cold.
      const timer = setTimeout(() => {
        finish();
        void this.kill(environment);
        reject(
          new LambdaInvocationError(
            this.name,
            "timeout",
            "Sandbox.Timedout",
            `Task timed out after ${this.options.spec.timeoutSeconds.toFixed(2)} seconds`,
          ),
        );
      }, timeoutMs);
      child.on("message", onMessage);
      child.once("exit", onExit);
      child.send({ type: "invoke", id, event, deadline: Date.now() + timeoutMs, requestId: id }, (error) => {
        if (!error) return;
        finish();
        environment.alive = false;
        reject(new LambdaInvocationError(this.name, "crash", "Runtime.ExitError", error.message));
      });
    });
  }

  private async kill(environment: Environment): Promise<void> {
    const { child } = environment;
    environment.alive = false;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((done) => child.once("exit", done));
    child.kill("SIGKILL");
    await exited;
  }
}
