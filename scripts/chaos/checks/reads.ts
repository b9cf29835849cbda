import type { OpRecord } from "../history.ts";
import { TENANTS } from "../tenants.ts";
import {
  type CheckContext,
  DEFAULT_BASELINE_MS,
  faultNear,
  field,
  MIN_BASELINE_SAMPLES,
  mayHaveActed,
  p99,
} from "./support.ts";

/**
 * Invariant 7 for the quiet tenant's `GET /v1/stats` and `GET /v1/timeline`, read while the noisy
 * tenant's backlog is large:
 * - tenant-read-truncated: the timeline says `truncated` (or stats `farTruncated`), though the quiet
 *   tenant has created far fewer events than one read takes (10,000 a shard): only other tenants'
 *   volume can have filled the read.
 * - tenant-read-leak: the answer counts more pending events (stats: scheduled, retrying,
 *   dispatched, running, and the index size; timeline: every bucket and overdue) than the quiet
 *   tenant had ever sent creates for: another tenant's work shows through.
 * - tenant-read-slow: with no fault near, a read after the noisy tenant started took longer than
 *   the p99 of the quiet tenant's own reads before it (1 s with fewer than 5) plus 2 s (a lost
 *   answer counts as the time waited for it), or answered 5xx: its cost depends on other tenants'
 *   volume.
 */
const READ_SLACK_MS = 2_000;
const LIVE = ["scheduled", "retrying", "dispatched", "running"];

export function checkQuietReads(ctx: CheckContext): void {
  const quiet = TENANTS.quiet.id;
  const mine = ctx.ops.filter((r) => r.tenant === quiet);
  const reads = mine.filter((r) => r.op.type === "stats" || r.op.type === "timeline");
  const createdBy = (at: number) =>
    mine.filter((r) => r.op.type === "create" && r.sentAt < at && mayHaveActed(r)).length;

  for (const r of reads) {
    if (r.status !== 200) continue;
    const created = createdBy(r.recvAt);
    const what = r.op.type;
    if (field(r.body, "truncated") === true || field(r.body, "farTruncated") === true)
      ctx.report(
        "tenant-read-truncated",
        `quiet ${what}`,
        `${what} answered truncated for a tenant that had sent ${created} creates in all`,
        [r],
      );
    const counted = what === "stats" ? statsPending(r) : timelinePending(r);
    if (counted > created)
      ctx.report(
        "tenant-read-leak",
        `quiet ${what}`,
        `${what} counts ${counted} pending events; the tenant had sent ${created} creates in all`,
        [r],
      );
  }

  const noisyFrom = ctx.bounds?.noisyFrom;
  if (noisyFrom === undefined) return;
  const calmReads = (r: OpRecord) => !faultNear(ctx, r.sentAt, r.recvAt);
  const baselines = reads.filter((r) => r.sentAt < noisyFrom && r.status === 200 && calmReads(r));
  const taken = baselines.map((r) => r.recvAt - r.sentAt);
  const baseline = taken.length >= MIN_BASELINE_SAMPLES ? p99(taken) : DEFAULT_BASELINE_MS;
  const bound = baseline + READ_SLACK_MS;
  for (const r of reads) {
    if (r.sentAt < noisyFrom || !calmReads(r) || r.error === "refused") continue;
    const took = r.recvAt - r.sentAt;
    // A lost answer is as slow as the wait for it; a 5xx is a failure however fast.
    const failed = r.status !== undefined && r.status >= 500;
    if (!failed && took <= bound) continue;
    ctx.report(
      "tenant-read-slow",
      `quiet ${r.op.type}`,
      `${failed ? `failed (${r.status})` : r.status === undefined ? `no answer (${r.error})` : "answered"} after ${took} ms beside the noisy tenant, with no fault near; bound ${bound} ms (p99 of ${taken.length} earlier reads, or 1 s, + ${READ_SLACK_MS} ms)`,
      [r],
    );
  }
}

function statsPending(r: OpRecord): number {
  const byStatus = (field(r.body, "byStatus") ?? {}) as Record<string, unknown>;
  const live = LIVE.reduce((sum, s) => sum + (Number(byStatus[s]) || 0), 0);
  return Math.max(live, Number(field(r.body, "indexSize")) || 0);
}

function timelinePending(r: OpRecord): number {
  const types = (field(r.body, "types") ?? {}) as Record<string, unknown>;
  const overdue = (field(r.body, "overdue") ?? {}) as Record<string, unknown>;
  let sum = 0;
  for (const buckets of Object.values(types))
    if (Array.isArray(buckets)) for (const n of buckets) sum += Number(n) || 0;
  for (const n of Object.values(overdue)) sum += Number(n) || 0;
  return sum;
}
