import { startRuntime } from "../shared/local/runtime.ts";
import { parseOccurrenceId } from "../shared/schedules/occurrence-id.ts";
import { benchHourglass } from "./hourglass.ts";
import { lateness, payloadOf, sleep, until } from "./stats.ts";

/**
 * Recurring schedules on the full local stack: `count` schedules each firing every `everySeconds`
 * for `seconds`, beside a trickle of one-off events in the same run. Reports whether every
 * occurrence ran exactly once and none early, and the lateness of occurrences and of one-offs.
 */
export async function recurring(redisUrl: string, count: number, everySeconds: number, seconds: number) {
  const { hourglass, samples } = await benchHourglass("full", redisUrl);
  const schedules = hourglass.schedules!;
  const payload = payloadOf(100);
  const createStarted = performance.now();
  // Every schedule starts after all are created (assuming at least 250 creates a second), spread
  // over the interval so the same number of occurrences falls due each second.
  const firstAt = Math.ceil((Date.now() + 15_000 + count * 4) / 1000) * 1000;
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < count) {
        const i = next++;
        await schedules.create("bench", {
          id: `s${i}`,
          rate: `${everySeconds} seconds`,
          startAt: new Date(firstAt + (i % everySeconds) * 1000).toISOString(),
          event: { type: "bench.noop", payload },
          catchUp: "none",
        });
      }
    }),
  );
  const createPerSecond = count / ((performance.now() - createStarted) / 1000);
  const runtime = startRuntime(hourglass, { pollers: 16, maxInFlight: 5_000 });
  await sleep(Math.max(0, firstAt - Date.now()));
  const started = Date.now();
  // One-off events beside the occurrences: 50 a second, each 8 s ahead.
  while (Date.now() - started < seconds * 1000) {
    await hourglass.events.schedule("bench", { type: "bench.noop", payload, delaySeconds: 8 });
    await sleep(20);
  }
  const stopAt = Date.now();
  // Stop the schedules, then let what was created run.
  for (let i = 0; i < count; i += 64) {
    await Promise.all(
      Array.from({ length: Math.min(64, count - i) }, (_, k) => schedules.pause("bench", `s${i + k}`)),
    );
  }
  const views = await Promise.all(Array.from({ length: count }, (_, i) => schedules.get("bench", `s${i}`)));
  const created = views.reduce((sum, v) => sum + v.occurrences, 0);
  const occurrenceStarts = () =>
    samples.filter((s) => s.member && parseOccurrenceId(s.member.split("/")[1]!));
  await until(() => occurrenceStarts().length >= created && samples.length - created >= 1, 120_000);
  await sleep(3_000);
  await runtime.stop();
  const occ = occurrenceStarts();
  const ids = occ.map((s) => s.member!);
  const duplicates = ids.length - new Set(ids).size;
  // Every instant up to the stop (less a horizon) of every schedule must have run.
  let missing = 0;
  for (const view of views) {
    const ran = new Set(occ.filter((s) => s.member!.startsWith(`bench/${view.id}@`)).map((s) => s.runAt));
    const first = view.createdAt;
    for (
      let t = Math.ceil(first / 1000) * 1000 + everySeconds * 1000;
      t < stopAt - 10_000;
      t += everySeconds * 1000
    ) {
      if (!ran.has(t)) missing++;
    }
  }
  const oneOff = samples.filter((s) => !s.member || !parseOccurrenceId(s.member.split("/")[1]!));
  await hourglass.close();
  return {
    createPerSecond,
    occurrences: lateness(occ),
    oneOff: lateness(oneOff),
    created,
    ran: occ.length,
    duplicates,
    missing,
  };
}
