/** Percentile of an unsorted sample (nearest rank). */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export interface Lateness {
  readonly count: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  /** Starts before runAt: must be 0. */
  readonly early: number;
  /** Events started per second, from the first due time to the last start. */
  readonly drainPerSecond: number;
}

export function lateness(samples: readonly { runAt: number; startedAt: number }[]): Lateness {
  const late = samples.map((s) => s.startedAt - s.runAt);
  const firstDue = Math.min(...samples.map((s) => s.runAt));
  const lastStart = Math.max(...samples.map((s) => s.startedAt));
  return {
    count: samples.length,
    p50: percentile(late, 50),
    p99: percentile(late, 99),
    max: Math.max(...late),
    early: late.filter((l) => l < 0).length,
    drainPerSecond: samples.length / Math.max(0.001, (lastStart - firstDue) / 1000),
  };
}

export function payloadOf(bytes: number): { data: string } {
  // {"data":"…"} is 11 bytes of JSON around the string.
  return { data: "x".repeat(bytes - 11) };
}

export const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

/** Waits until `done()` or the timeout; returns whether it completed. */
export async function until(done: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) return false;
    await sleep(10);
  }
  return true;
}
