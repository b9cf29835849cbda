import { Semaphore } from "async-mutex";
import { WebhookSlotsBusyError } from "./errors.ts";

/** Weight of the newest request in a pair's running mean of request durations. */
const MEAN_WEIGHT = 0.2;

/** One tenant's requests to one origin in this process. */
interface Pair {
  readonly semaphore: Semaphore;
  /** Requests queued for a slot now (those that gave up excluded). */
  waiting: number;
  /** Running mean of how long a request held its slot; undefined until one finished. */
  meanMs: number | undefined;
}

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
 * A wait for a slot is bounded by the caller (what the attempt has left beyond the request's own
 * timeout, so the wait never eats into the receiver's time). A request whose turn would not come
 * within that bound, judged by the requests queued ahead and how long this pair's requests have
 * been taking, is refused at once rather than after holding one of the worker's places for the
 * whole wait (a slow receiver's backlog would crowd out other tenants' events); one whose wait runs
 * out all the same is refused then. Either way `WebhookSlotsBusyError` says when to come back, and
 * the worker retries it then without counting the attempt.
 */
export class WebhookSlots {
  private readonly pairs = new Map<string, Pair>();

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
    let pair = this.pairs.get(key);
    if (!pair) {
      pair = { semaphore: new Semaphore(this.perOrigin), waiting: 0, meanMs: undefined };
      this.pairs.set(key, pair);
    }
    const owner = pair;
    if (owner.semaphore.getValue() <= 0) {
      const expected = this.expectedWaitMs(owner);
      if (expected > waitMs) throw new WebhookSlotsBusyError(origin, this.perOrigin, 0, expected);
    }
    const ticket = owner.semaphore.acquire();
    owner.waiting++;
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<undefined>((resolve) => {
      // Node fires a timer of more than 2^31 - 1 ms after 1 ms instead.
      timer = setTimeout(resolve, Math.min(Math.max(0, waitMs), 2 ** 31 - 1), undefined);
    });
    // A free slot is handed over within microtasks, before any timer (even one of 0 ms) fires.
    const turn = await Promise.race([ticket, gaveUp]);
    clearTimeout(timer);
    owner.waiting--;
    if (!turn) {
      // Still queued: the slot, once it comes, is handed back at once.
      void ticket.then(([, release]) => this.free(key, owner, release));
      throw new WebhookSlotsBusyError(origin, this.perOrigin, waitMs, this.expectedWaitMs(owner));
    }
    const startedAt = performance.now();
    try {
      return await request();
    } finally {
      const tookMs = performance.now() - startedAt;
      owner.meanMs =
        owner.meanMs === undefined ? tookMs : owner.meanMs + MEAN_WEIGHT * (tookMs - owner.meanMs);
      this.free(key, owner, turn[1]);
    }
  }

  /** Tenant and origin pairs with a request in flight or waiting (idle pairs are forgotten). */
  get size(): number {
    return this.pairs.size;
  }

  /**
   * How long one more request would wait for a slot: the queued requests ahead go through the
   * slots a round at a time, and the round in flight is (on average) half done.
   */
  private expectedWaitMs(pair: Pair): number {
    const mean = pair.meanMs ?? 0;
    return (Math.floor(pair.waiting / this.perOrigin) + 0.5) * mean;
  }

  private free(key: string, pair: Pair, release: () => void): void {
    release();
    // A release hands the slot to the next waiter at once, so a full count means nobody waits.
    if (pair.semaphore.getValue() === this.perOrigin && this.pairs.get(key) === pair) this.pairs.delete(key);
  }
}
