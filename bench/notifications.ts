import { startRuntime } from "../shared/local/runtime.ts";
import { benchHourglass, type Mode } from "./hourglass.ts";
import { type Lateness, lateness, payloadOf, sleep, until } from "./stats.ts";

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
    const { hourglass, samples } = await benchHourglass(mode, redisUrl, {
      env: { HOURGLASS_NOTIFICATIONS: String(enabled) },
    });
    const runtime = startRuntime(hourglass);
    const total = perSecond * seconds;
    const payload = payloadOf(100);
    const started = Date.now();
    for (let i = 0; i < total; i++) {
      const wait = started + (i * 1000) / perSecond - Date.now();
      if (wait > 0) await sleep(wait);
      await hourglass.events.schedule("bench", { type: "bench.noop", payload, delaySeconds: aheadMs / 1000 });
    }
    await until(() => samples.length >= total, aheadMs + 30_000);
    await runtime.stop();
    await hourglass.notifier.flush();
    const stats = hourglass.notifier.stats();
    await hourglass.close();
    return { lateness: lateness(samples), stats };
  };
  // Off first, then on: the order is fixed so a warm-up effect, if any, favours "off".
  const off = await run(false);
  const on = await run(true);
  return { on: on.lateness, off: off.lateness, published: on.stats.published, failed: on.stats.failed };
}
