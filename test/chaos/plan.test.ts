import { describe, expect, it } from "vitest";
import { makePlan, PROFILES } from "../../scripts/chaos/plan.ts";

describe("the soak's plan", () => {
  it("is the same for the same seed, so a failure can be replayed", () => {
    expect(makePlan(42, PROFILES.short)).toEqual(makePlan(42, PROFILES.short));
    expect(makePlan(42, PROFILES.short).faults).not.toEqual(makePlan(43, PROFILES.short).faults);
  });

  it("injects every fault kind within the load, and creates, cancels, reschedules, replays, leases and holds", () => {
    const plan = makePlan(8, PROFILES.short);
    expect(new Set(plan.faults.map((f) => f.kind)).size).toBe(7);
    for (const f of plan.faults) expect(f.atMs).toBeLessThan(PROFILES.short.loadMs);
    const kinds = new Set(plan.ops.map((o) => o.op.kind));
    for (const kind of [
      "create",
      "batch",
      "cancel",
      "reschedule",
      "replay",
      "lease",
      "receipt",
      "hold",
      "confirm",
    ])
      expect(kinds, kind).toContain(kind);
    // Some creates repeat an id with the same body, some with a different one.
    const creates = plan.ops.flatMap((o) =>
      o.op.kind === "create" ? [o.op.event] : o.op.kind === "batch" ? o.op.events : [],
    );
    expect(creates.some((e) => e.version === 2)).toBe(true);
    expect(new Set(creates.map((e) => e.n)).size).toBeLessThan(creates.filter((e) => e.version === 1).length);
    for (const skew of plan.skews) expect(Math.abs(skew)).toBeLessThanOrEqual(1_000);
  });
});
