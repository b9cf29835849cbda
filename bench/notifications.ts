import { type Mode, steady } from "./hourglass.ts";
import type { Lateness } from "./stats.ts";

export interface NotificationOverhead {
  readonly on: Lateness;
  readonly off: Lateness;
  /** Notices delivered to the tenant's Redis stream during the run with notifications on. */
  readonly published: number;
  readonly failed: number;
}

/**
 * The cost of notifications to the events they describe: the same steady load twice in one run,
 * with every transition published to the tenant's Redis stream, and with notifications off.
 */
export async function notificationOverhead(
  mode: Mode,
  redisUrl: string,
  perSecond: number,
  seconds: number,
  aheadMs: number,
): Promise<NotificationOverhead> {
  const run = async (enabled: boolean) => {
    let stats = { published: 0, failed: 0 };
    const result = await steady(mode, redisUrl, perSecond, seconds, aheadMs, {
      env: { HOURGLASS_NOTIFICATIONS: String(enabled) },
      beforeClose: async (hourglass) => {
        await hourglass.notifier.flush();
        stats = hourglass.notifier.stats();
      },
    });
    return { lateness: result, stats };
  };
  // Off first, then on: the order is fixed so a warm-up effect, if any, favours "off".
  const off = await run(false);
  const on = await run(true);
  return { on: on.lateness, off: off.lateness, published: on.stats.published, failed: on.stats.failed };
}
