import { Agent as HttpAgent } from "node:http";
import { Agent as HttpsAgent } from "node:https";

/**
 * Keep-alive connection pools for webhooks: one pair (http, https) per tenant, each with at most
 * `socketsPerOrigin` sockets to one origin; requests beyond that wait in the pool for a socket.
 *
 * Why a cap: a worker runs up to `maxInFlight` handlers at once, and Node's global agent opens a
 * socket for every request that finds none free, so a burst of webhooks to one receiver opened
 * hundreds of connections together (500 a worker process in the 2,000-webhook bench), which the
 * receiver must accept and both sides must set up; with the sockets reused the same burst arrives
 * sooner (docs/benchmarks.md, "Webhooks: pooled sockets"). Why per tenant: a tenant whose receiver
 * is slow fills only its own pool, never another tenant's requests to the same host (invariant 7).
 *
 * The request timeout runs from the moment a request has its socket (`webhook.ts`), so waiting
 * here is not the receiver's fault; the handler's own deadline still bounds it.
 */
export class WebhookAgents {
  /** Least recently used first (a Map iterates in insertion order; a use moves a tenant last). */
  private readonly pools = new Map<string, { readonly http: HttpAgent; readonly https: HttpsAgent }>();

  /**
   * @param socketsPerOrigin sockets one tenant may have open to one origin (config
   *   `webhook.socketsPerOrigin`, HOURGLASS_WEBHOOK_SOCKETS_PER_ORIGIN)
   * @param maxIdleTenants pools kept beyond the busy ones: past it, the least recently used pool
   *   with no request in flight is closed
   */
  constructor(
    private readonly socketsPerOrigin: number,
    private readonly maxIdleTenants = 1_000,
  ) {
    if (!Number.isInteger(socketsPerOrigin) || socketsPerOrigin < 1)
      throw new RangeError(`socketsPerOrigin must be a positive integer, got ${socketsPerOrigin}`);
  }

  /** The agent for `tenant`'s requests over `protocol` (`http:` or `https:`). */
  agentFor(tenant: string, protocol: string): HttpAgent {
    let pool = this.pools.get(tenant);
    if (pool) {
      this.pools.delete(tenant);
    } else {
      const options = { keepAlive: true, maxSockets: this.socketsPerOrigin, scheduling: "lifo" as const };
      pool = { http: new HttpAgent(options), https: new HttpsAgent(options) };
      this.evictIdle();
    }
    this.pools.set(tenant, pool);
    return protocol === "https:" ? pool.https : pool.http;
  }

  /** Pools open now (a tenant's pair counts once). */
  get size(): number {
    return this.pools.size;
  }

  /** Closes every pool's sockets (a worker that stops). */
  destroy(): void {
    for (const pool of this.pools.values()) {
      pool.http.destroy();
      pool.https.destroy();
    }
    this.pools.clear();
  }

  private evictIdle(): void {
    if (this.pools.size < this.maxIdleTenants) return;
    for (const [tenant, pool] of this.pools) {
      if (this.pools.size < this.maxIdleTenants) return;
      if (busy(pool.http) || busy(pool.https)) continue;
      pool.http.destroy();
      pool.https.destroy();
      this.pools.delete(tenant);
    }
  }
}

/** A request in flight or waiting for a socket (free keep-alive sockets do not count). */
function busy(agent: HttpAgent): boolean {
  const inUse = (lists: NodeJS.ReadOnlyDict<unknown[]>) =>
    Object.values(lists).some((list) => (list?.length ?? 0) > 0);
  return inUse(agent.sockets) || inUse(agent.requests);
}
