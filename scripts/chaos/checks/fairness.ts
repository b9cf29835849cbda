import type { ArrivalRecord, HistoryRecord } from "../history.ts";
import { TENANTS } from "../tenants.ts";
import {
  type CheckContext,
  DEFAULT_BASELINE_MS,
  faultNear,
  MIN_BASELINE_SAMPLES,
  PRECISION_MS,
  p99,
} from "./support.ts";

/**
 * Invariant 7 as lateness: the quiet tenant's events keep their normal lateness while the noisy
 * tenant holds, rate-limits and floods its own backlog.
 *
 * - Lateness of a quiet event: its first delivery (receiver's clock) minus the later of the runAt
 *   its create answered 201 for and that answer's arrival (the event may not have existed before
 *   it; a slow create is not the dispatcher's lateness). The quiet tenant never reschedules or
 *   cancels.
 * - Excused: an event a fault may have delayed, i.e. a fault, its recovery included, overlaps the
 *   span from a look-ahead before its runAt (when it could be claimed) to its first delivery.
 * - Normal lateness (the baseline): the p99 of the unexcused quiet events due before the noisy
 *   tenant starts, in the same run; with fewer than 5 of them, 1 s.
 * - Bound: baseline + 1 s (Hourglass's promised precision) + one dispatcher period. Every
 *   unexcused quiet event due after the noisy tenant started must arrive within it.
 */
export function checkQuietLateness(ctx: CheckContext): void {
  const bounds = ctx.bounds;
  if (!bounds) return;
  const quiet = TENANTS.quiet.id;
  const first = new Map<string, ArrivalRecord>();
  const arrivals = new Map<string, ArrivalRecord[]>();
  for (const r of ctx.history) {
    if (r.kind !== "arrival" || !r.id.startsWith("q-")) continue;
    if (!first.has(r.id)) first.set(r.id, r);
    arrivals.set(r.id, [...(arrivals.get(r.id) ?? []), r]);
  }
  const samples: { id: string; runAt: number; late: number; records: HistoryRecord[] }[] = [];
  for (const r of ctx.ops) {
    if (r.tenant !== quiet || r.op.type !== "create" || r.status !== 201) continue;
    const runAt = r.op.event.runAt;
    const arrival = first.get(r.op.event.id);
    // Never delivered: the never-ran rule speaks for it.
    if (!arrival || faultNear(ctx, runAt - bounds.lookAheadMs, arrival.at)) continue;
    samples.push({
      id: r.op.event.id,
      runAt,
      late: arrival.at - Math.max(runAt, r.recvAt),
      records: [r, ...(arrivals.get(r.op.event.id) ?? [])],
    });
  }
  const calm = samples.filter((s) => s.runAt < bounds.noisyFrom).map((s) => s.late);
  const baseline = calm.length >= MIN_BASELINE_SAMPLES ? Math.max(0, p99(calm)) : DEFAULT_BASELINE_MS;
  const bound = baseline + PRECISION_MS + bounds.tickMs;
  const source =
    calm.length >= MIN_BASELINE_SAMPLES
      ? `p99 ${baseline} ms of ${calm.length} quiet events due before the noisy tenant started`
      : `the default ${DEFAULT_BASELINE_MS} ms (only ${calm.length} calm samples)`;
  for (const s of samples) {
    if (s.runAt < bounds.noisyFrom || s.late <= bound) continue;
    ctx.report(
      "quiet-tenant-late",
      s.id,
      `first delivered ${s.late} ms after its runAt beside the noisy tenant, beyond the bound ${bound} ms (baseline: ${source}; + ${PRECISION_MS} ms + one ${bounds.tickMs} ms tick), with no fault near`,
      s.records,
    );
  }
}
