import { Cluster, Redis } from "ioredis";
import { defineScripts, type RedisClient } from "./scripts.ts";

/**
 * Creates the Redis client for a URL: a single node, or a cluster seeded from it. `rediss://` turns
 * TLS on (ElastiCache in transit encryption); a password in the URL is the AUTH token.
 */
export function createRedis(url: string, cluster: boolean): RedisClient {
  const parsed = new URL(url);
  const tls = parsed.protocol === "rediss:" ? {} : undefined;
  const client: RedisClient = cluster
    ? new Cluster([{ host: parsed.hostname, port: Number(parsed.port || 6379) }], {
        dnsLookup: (address, callback) => callback(null, address),
        redisOptions: {
          tls,
          password: parsed.password ? decodeURIComponent(parsed.password) : undefined,
          username: parsed.username ? decodeURIComponent(parsed.username) : undefined,
        },
      })
    : new Redis(url, { tls, maxRetriesPerRequest: 3 });
  defineScripts(client);
  return client;
}
