/**
 * Lateness buckets: four per power of two of (ms + 1), so a bucket's upper bound is at most ~19%
 * above its lower bound. That is the precision a p99 needs, and a day of a busy type still fits in
 * about a hundred counters per minute at most (only non-empty buckets are stored).
 */
const PER_OCTAVE = 4;
/** Anything later than ~2^30 ms (12 days) shares the last bucket. */
const LAST_BUCKET = 30 * PER_OCTAVE;

export function latenessBucket(lateMs: number): number {
  const ms = Math.max(0, lateMs);
  return Math.min(LAST_BUCKET, Math.floor(PER_OCTAVE * Math.log2(ms + 1)));
}

/** The largest lateness (ms) a bucket holds: what a percentile falling in it reports. */
export function bucketUpperMs(bucket: number): number {
  return Math.max(0, Math.ceil(2 ** ((bucket + 1) / PER_OCTAVE) - 1));
}

/** Bucket → count. */
export type Histogram = Map<number, number>;

export function addInto(target: Histogram, source: Histogram): void {
  for (const [bucket, count] of source) target.set(bucket, (target.get(bucket) ?? 0) + count);
}

export function histogramCount(histogram: Histogram): number {
  let total = 0;
  for (const count of histogram.values()) total += count;
  return total;
}

/** The upper bound of the bucket holding the q-th quantile (0 < q ≤ 1); undefined when empty. */
export function quantileMs(histogram: Histogram, q: number): number | undefined {
  const total = histogramCount(histogram);
  if (total === 0) return undefined;
  const rank = Math.ceil(q * total);
  let seen = 0;
  for (const bucket of [...histogram.keys()].sort((a, b) => a - b)) {
    seen += histogram.get(bucket)!;
    if (seen >= rank) return bucketUpperMs(bucket);
  }
  return undefined;
}
