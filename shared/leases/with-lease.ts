import { StaleLeaseError } from "./errors.ts";
import type { LeaseService } from "./lease-service.ts";

export interface WithLeaseOptions {
  readonly tenant: string;
  readonly owner: string;
  /** Called when a renewal fails, just before `fn`'s signal is aborted. */
  readonly onLost?: (error: unknown) => void;
}

/** The lease was lost while `fn` ran: a renewal failed, so `fn` was told to stop. */
export class LeaseLostError extends Error {
  constructor(
    readonly leaseName: string,
    options?: { cause?: unknown },
  ) {
    super(`lease ${leaseName} was lost while its holder was working`, options);
    this.name = "LeaseLostError";
  }
}

/**
 * Runs `fn` while holding the lease `name`: acquires it (or throws LeaseHeldError), renews it in
 * the background at a third of the TTL, aborts `fn`'s signal as soon as a renewal fails, and
 * releases it in `finally`. `fn` gets the fencing token to pass to whatever it protects.
 */
export async function withLease<T>(
  leases: LeaseService,
  name: string,
  ttlMs: number,
  fn: (signal: AbortSignal, token: number) => Promise<T>,
  options: WithLeaseOptions,
): Promise<T> {
  const grant = await leases.acquire(options.tenant, name, options.owner, ttlMs);
  const controller = new AbortController();
  let renewing: Promise<unknown> = Promise.resolve();
  const timer = setInterval(
    () => {
      renewing = leases
        .renew(options.tenant, name, options.owner, grant.token, ttlMs)
        .catch((error: unknown) => {
          clearInterval(timer);
          options.onLost?.(error);
          controller.abort(new LeaseLostError(name, { cause: error }));
        });
    },
    Math.max(10, Math.floor(ttlMs / 3)),
  );
  try {
    return await fn(controller.signal, grant.token);
  } finally {
    clearInterval(timer);
    await renewing;
    if (!controller.signal.aborted) {
      await leases.release(options.tenant, name, options.owner, grant.token).catch((error: unknown) => {
        if (!(error instanceof StaleLeaseError)) throw error;
      });
    }
  }
}
