import { DependencyUnavailableError } from "../handlers/errors.ts";
import type { BackoffPolicy } from "../model/event.ts";

/** The longest a given-back attempt's own hint may push its retry out. */
export const RETRY_AFTER_CAP_MS = 15 * 60_000;

export interface BackoffDefaults {
  readonly baseMs: number;
  readonly maxMs: number;
}

/**
 * The wait before the next attempt, after `attempt` failed ones. Exponential with full jitter
 * (a uniform draw in [0, min(max, base·2^(attempt-1))]), which spreads a burst of failures out
 * instead of retrying them in lockstep. A fixed policy waits exactly its delay.
 */
export function backoffDelay(
  attempt: number,
  policy: BackoffPolicy | undefined,
  defaults: BackoffDefaults,
  random: () => number = Math.random,
): number {
  const strategy = policy?.strategy ?? "exponential";
  const base = policy?.delayMs ?? defaults.baseMs;
  const max = policy?.maxDelayMs ?? defaults.maxMs;
  if (strategy === "fixed") return Math.min(base, max);
  const ceiling = Math.min(max, base * 2 ** Math.max(0, attempt - 1));
  return Math.floor(random() * ceiling);
}

/**
 * The wait before retrying after `error`: the backoff, or, for an attempt given back with a hint of
 * when to come back (`DependencyUnavailableError.retryAfterMs`), at least the hint, spread by up to
 * half again so a refused burst does not come back at once, and never more than 15 minutes.
 */
export function retryDelay(
  error: unknown,
  attempt: number,
  policy: BackoffPolicy | undefined,
  defaults: BackoffDefaults,
  random: () => number = Math.random,
): number {
  const backoff = backoffDelay(attempt, policy, defaults, random);
  const hint = error instanceof DependencyUnavailableError ? (error.retryAfterMs ?? 0) : 0;
  if (!(hint > 0)) return backoff;
  // Whole milliseconds: a retry's time goes into the index and the message as an integer.
  return Math.max(backoff, Math.ceil(Math.min(RETRY_AFTER_CAP_MS, hint * (1 + random() / 2))));
}
