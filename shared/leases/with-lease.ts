import { LeaseLostError, LeaseValidationError, RenewalTimeoutError, StaleLeaseError } from "./errors.ts";
import { type LeaseService, MAX_LEASE_TTL_MS } from "./lease-service.ts";

export interface WithLeaseOptions {
  readonly tenant: string;
  readonly owner: string;
  /** Called once when the lease is lost (a renewal failed, or none was confirmed in time), just before `fn`'s signal is aborted. */
  readonly onLost?: (error: unknown) => void;
}

/** Shortest ttl `withLease` accepts: it renews at a third of it and stops a quarter before it ends. */
export const MIN_WITH_LEASE_TTL_MS = 100;
/**
 * How long before the last confirmed expiry `fn` is stopped when no renewal answers: covers timer
 * lateness on a busy event loop. A new owner needs the expiry plus CLOCK_SKEW_MARGIN_MS on top.
 */
export const ABORT_MARGIN_MS = 1_000;

/**
 * Runs `fn` while holding the lease `name`: acquires it (or throws LeaseHeldError), renews it in
 * the background at a third of the TTL, and releases it in `finally`. `fn` gets the fencing token
 * to pass to whatever it protects, and a signal that is aborted as soon as the lease may be lost:
 * when a renewal fails, and also when none has been confirmed by the last confirmed expiry minus a
 * margin. The second matters because a renewal that hangs (a stuck connection, a partition)
 * never fails; without a local deadline `fn` would run on while a new owner holds the lease.
 */
export async function withLease<T>(
  leases: LeaseService,
  name: string,
  ttlMs: number,
  fn: (signal: AbortSignal, token: number) => Promise<T>,
  options: WithLeaseOptions,
): Promise<T> {
  if (!Number.isSafeInteger(ttlMs) || ttlMs < MIN_WITH_LEASE_TTL_MS || ttlMs > MAX_LEASE_TTL_MS) {
    throw new LeaseValidationError([
      {
        path: "ttlMs",
        message: `a whole number of milliseconds from ${MIN_WITH_LEASE_TTL_MS} to ${MAX_LEASE_TTL_MS}`,
      },
    ]);
  }
  const margin = Math.min(ABORT_MARGIN_MS, Math.floor(ttlMs / 4));
  // Local deadlines use the monotonic clock, from when each request was sent: the lease item's
  // expiry was computed no earlier than that, so the deadline is never later than the real one.
  const sentAt = performance.now();
  const grant = await leases.acquire(options.tenant, name, options.owner, ttlMs);
  const controller = new AbortController();
  let stopped = false;
  let renewTimer: ReturnType<typeof setTimeout> | undefined;
  let deadlineTimer: ReturnType<typeof setTimeout> | undefined;

  const lose = (error: unknown) => {
    if (stopped || controller.signal.aborted) return;
    clearTimeout(renewTimer);
    clearTimeout(deadlineTimer);
    options.onLost?.(error);
    controller.abort(new LeaseLostError(name, { cause: error }));
  };
  const confirmedUntil = (requestSentAt: number) => {
    clearTimeout(deadlineTimer);
    deadlineTimer = setTimeout(
      () => lose(new RenewalTimeoutError(name)),
      Math.max(0, requestSentAt + ttlMs - margin - performance.now()),
    );
  };
  // One renewal in flight at a time: the next is planned only once the previous one answered.
  const renewLater = () => {
    renewTimer = setTimeout(
      () => {
        const renewalSentAt = performance.now();
        leases.renew(options.tenant, name, options.owner, grant.token, ttlMs).then(
          () => {
            if (stopped || controller.signal.aborted) return;
            confirmedUntil(renewalSentAt);
            renewLater();
          },
          (error: unknown) => lose(error),
        );
      },
      Math.max(10, Math.floor(ttlMs / 3)),
    );
  };
  confirmedUntil(sentAt);
  renewLater();
  try {
    return await fn(controller.signal, grant.token);
  } finally {
    stopped = true;
    clearTimeout(renewTimer);
    clearTimeout(deadlineTimer);
    // A renewal still in flight is not awaited: it may be the one that hangs. If it lands after
    // the release, its condition (this owner and token) fails and changes nothing.
    if (!controller.signal.aborted) {
      await leases.release(options.tenant, name, options.owner, grant.token).catch((error: unknown) => {
        if (!(error instanceof StaleLeaseError)) throw error;
      });
    }
  }
}
