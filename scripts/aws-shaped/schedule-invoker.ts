import { LambdaInvocationError } from "./errors.ts";
import type { LambdaFunction } from "./lambda-function.ts";
import type { FunctionSpec, ScheduleSpec } from "./template.ts";

export interface ScheduleInvokerOptions {
  readonly schedule: ScheduleSpec;
  readonly fn: LambdaFunction;
  readonly target: FunctionSpec;
  /** The schedule's state now: `hourglass pause --aws` changes it through the Scheduler stand-in. */
  readonly state: () => "ENABLED" | "DISABLED";
  readonly log: (line: string) => void;
  /**
   * Fire once at start as well. A schedule made by `cdk deploy` first fires one period after it is
   * created; firing at once only moves that first tick earlier. @default true
   */
  readonly fireAtStart?: boolean;
}

export interface ScheduleStats {
  readonly fired: number;
  readonly skippedDisabled: number;
  readonly invocations: number;
  readonly succeeded: number;
  readonly errors: number;
  readonly throttled: number;
  readonly dropped: number;
}

/** Lambda's retry delays after a function error in an asynchronous invocation: about 1, then 2 minutes. */
const ERROR_RETRY_DELAYS_MS = [60_000, 120_000];
/** Throttled asynchronous events are retried with backoff from 1 s up to 5 minutes, until they age out. */
const THROTTLE_BACKOFF_MS = { first: 1_000, max: 300_000 };

/** `rate(1 minute)`, `rate(5 minutes)`, `rate(2 hours)`, `rate(1 day)` in milliseconds. */
export function ratePeriodMs(expression: string): number {
  const match = /^rate\((\d+)\s+(minute|minutes|hour|hours|day|days)\)$/.exec(expression.trim());
  if (!match) throw new Error(`schedule expression ${expression}: only rate(...) is run by the harness`);
  const unit = match[2]!.startsWith("minute")
    ? 60_000
    : match[2]!.startsWith("hour")
      ? 3_600_000
      : 86_400_000;
  return Number(match[1]) * unit;
}

/**
 * EventBridge Scheduler invoking a function on its rate, and Lambda's asynchronous invocation behind
 * it: each firing is an event that Lambda runs when the function's concurrency allows, retries after
 * an error as the function's EventInvokeConfig says (2 retries by default), retries while throttled,
 * and drops once older than the maximum event age. Never more at once than the reserved concurrency.
 */
export class ScheduleInvoker {
  private timer: NodeJS.Timeout | undefined;
  private readonly pending = new Set<NodeJS.Timeout>();
  private readonly inFlight = new Set<Promise<void>>();
  private stopped = false;
  private counts = {
    fired: 0,
    skippedDisabled: 0,
    invocations: 0,
    succeeded: 0,
    errors: 0,
    throttled: 0,
    dropped: 0,
  };

  constructor(private readonly options: ScheduleInvokerOptions) {}

  start(): void {
    const period = ratePeriodMs(this.options.schedule.expression);
    if (this.options.fireAtStart !== false) this.fire();
    this.timer = setInterval(() => this.fire(), period);
  }

  stats(): ScheduleStats {
    return { ...this.counts };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    for (const timer of this.pending) clearTimeout(timer);
    await Promise.allSettled([...this.inFlight]);
  }

  private fire(): void {
    if (this.options.state() !== "ENABLED") {
      this.counts.skippedDisabled++;
      return;
    }
    this.counts.fired++;
    this.attempt({ createdAt: Date.now(), errors: 0, throttles: 0 });
  }

  private attempt(event: { createdAt: number; errors: number; throttles: number }): void {
    if (this.stopped) return;
    const { target, log, fn } = this.options;
    const maxAgeMs =
      Math.min(target.async.maximumEventAgeSeconds, this.options.schedule.retry.maximumEventAgeSeconds) *
      1000;
    if (Date.now() - event.createdAt > maxAgeMs) {
      this.counts.dropped++;
      log(`schedule ${this.options.schedule.logicalId}: event dropped, older than ${maxAgeMs / 1000} s`);
      return;
    }
    this.counts.invocations++;
    const run = fn
      .invoke({})
      .then(() => {
        this.counts.succeeded++;
      })
      .catch((error: unknown) => {
        if (error instanceof LambdaInvocationError && error.kind === "throttled") {
          this.counts.throttled++;
          const delay = Math.min(THROTTLE_BACKOFF_MS.max, THROTTLE_BACKOFF_MS.first * 2 ** event.throttles);
          this.later(delay, { ...event, throttles: event.throttles + 1 });
          return;
        }
        this.counts.errors++;
        log(`schedule ${this.options.schedule.logicalId}: ${(error as Error).message}`);
        if (event.errors < target.async.maximumRetryAttempts) {
          const delay = ERROR_RETRY_DELAYS_MS[Math.min(event.errors, ERROR_RETRY_DELAYS_MS.length - 1)]!;
          this.later(delay, { ...event, errors: event.errors + 1 });
        }
      })
      .finally(() => this.inFlight.delete(run));
    this.inFlight.add(run);
  }

  private later(delayMs: number, event: { createdAt: number; errors: number; throttles: number }): void {
    if (this.stopped) return;
    const timer = setTimeout(() => {
      this.pending.delete(timer);
      this.attempt(event);
    }, delayMs);
    this.pending.add(timer);
  }
}
