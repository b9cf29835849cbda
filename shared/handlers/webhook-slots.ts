import { Semaphore } from "async-mutex";
import { WebhookSlotsBusyError } from "./errors.ts";

/**
 * How many webhook requests one worker process has in flight at once to one origin, per tenant.
 *
 * Why a cap: a worker runs up to `maxInFlight` handlers at once, so a burst of webhooks to one
 * receiver otherwise opened hundreds of connections together (500 a worker process in the
 * 2,000-webhook bench), and every request waited on all the others; with a cap they go through
 * in turn over kept-alive sockets and the last one arrives sooner (docs/benchmarks.md). Why per
 * tenant: a tenant whose receiver is slow fills only its own slots, never another tenant's to
 * the same host (invariant 7).
 *
 * A wait for a slot is bounded by the caller (the handler's deadline less the request's own
 * timeout, so the wait never eats into the receiver's time); a wait that runs out throws
 * `WebhookSlotsBusyError`, which the worker retries without counting the attempt.
 */
export class WebhookSlots {
  private readonly semaphores = new Map<string, Semaphore>();

  /** @param perOrigin requests at once per tenant and origin (HOURGLASS_WEBHOOK_REQUESTS_PER_ORIGIN) */
  constructor(readonly perOrigin: number) {
    if (!Number.isInteger(perOrigin) || perOrigin < 1)
      throw new RangeError(`perOrigin must be a positive integer, got ${perOrigin}`);
  }

  /**
   * Runs `request` once one of the tenant's slots to `origin` is free (first come, first served),
   * waiting at most `waitMs`. The slot is held until `request` settles.
   */
  async run<T>(tenant: string, origin: string, waitMs: number, request: () => Promise<T>): Promise<T> {
    const key = `${tenant}\n${origin}`;
    let semaphore = this.semaphores.get(key);
    if (!semaphore) {
      semaphore = new Semaphore(this.perOrigin);
      this.semaphores.set(key, semaphore);
    }
    const owner = semaphore;
    const ticket = owner.acquire();
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<undefined>((resolve) => {
      // Node fires a timer of more than 2^31 - 1 ms after 1 ms instead.
      timer = setTimeout(resolve, Math.min(Math.max(0, waitMs), 2 ** 31 - 1), undefined);
    });
    // A free slot is handed over within microtasks, before any timer (even one of 0 ms) fires.
    const turn = await Promise.race([ticket, gaveUp]);
    clearTimeout(timer);
    if (!turn) {
      // Still queued: the slot, once it comes, is handed back at once.
      void ticket.then(([, release]) => this.free(key, owner, release));
      throw new WebhookSlotsBusyError(origin, this.perOrigin, waitMs);
    }
    try {
      return await request();
    } finally {
      this.free(key, owner, turn[1]);
    }
  }

  /** Tenant and origin pairs with a request in flight or waiting (idle pairs are forgotten). */
  get size(): number {
    return this.semaphores.size;
  }

  private free(key: string, semaphore: Semaphore, release: () => void): void {
    release();
    // A release hands the slot to the next waiter at once, so a full count means nobody waits.
    if (semaphore.getValue() === this.perOrigin && this.semaphores.get(key) === semaphore)
      this.semaphores.delete(key);
  }
}
