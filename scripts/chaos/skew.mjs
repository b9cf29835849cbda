// Preloaded into a worker (node --import) to skew its clock: Date.now() and `new Date()` run
// CHAOS_CLOCK_SKEW_MS ahead (or behind, when negative), as on a machine whose clock is off.
// Timers are not affected, as they are not by a wrong wall clock.
const skew = Number(process.env.CHAOS_CLOCK_SKEW_MS ?? 0);
if (skew !== 0 && Number.isFinite(skew)) {
  const RealDate = Date;
  const realNow = RealDate.now.bind(RealDate);
  const now = () => realNow() + skew;
  function SkewedDate(...args) {
    if (!new.target) return new RealDate(now()).toString();
    return args.length === 0 ? new RealDate(now()) : new RealDate(...args);
  }
  SkewedDate.prototype = RealDate.prototype;
  SkewedDate.now = now;
  SkewedDate.parse = RealDate.parse;
  SkewedDate.UTC = RealDate.UTC;
  globalThis.Date = SkewedDate;
}
