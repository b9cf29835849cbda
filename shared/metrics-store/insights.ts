import type { HourglassConfig } from "../config.ts";
import type { RedisIndex } from "../engine/redis-index.ts";
import type { RedisClient } from "../engine/scripts.ts";
import type { EventJournal } from "../journal/journal.ts";
import { type MetricsWindow, readMetrics, type TenantMetrics } from "./reader.ts";
import { type Horizon, readTimeline, type Timeline } from "./timeline.ts";

/** The read side of the metrics and the timeline, as the HTTP routes see it. */
export interface Insights {
  metrics(tenant: string, window: MetricsWindow): Promise<TenantMetrics>;
  timeline(tenant: string, horizon: Horizon): Promise<Timeline>;
}

export function insightsOf(
  hourglass: {
    readonly redis: RedisClient;
    readonly index: RedisIndex;
    readonly config: Pick<HourglassConfig, "keyPrefix">;
    readonly journal?: EventJournal | undefined;
  },
  clock = Date.now,
): Insights {
  return {
    metrics: (tenant, window) =>
      readMetrics(hourglass.redis, hourglass.config.keyPrefix, tenant, clock(), window),
    timeline: (tenant, horizon) => readTimeline(hourglass.index, tenant, clock(), horizon, hourglass.journal),
  };
}
