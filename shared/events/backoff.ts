import type { BackoffPolicy } from "../model/event.ts";

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
