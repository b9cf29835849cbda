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

  it("adds the other tenants' load, the schedules' lives, every role's clock skew, and calm windows without faults", () => {
    for (const profile of [PROFILES.short, PROFILES.long]) {
      const plan = makePlan(8, { ...profile, loadMs: Math.max(profile.loadMs, 60_000) });
      const kinds = plan.ops.map((o) => o.op.kind);
      for (const kind of [
        "noisy-batch",
        "quiet-create",
        "limits",
        "read",
        "schedule-create",
        "schedule-recreate",
        "schedule-edit",
      ])
        expect(kinds, `${profile.name}: ${kind}`).toContain(kind);
      // Paused, then rate-limited, then lifted; the last word is always "no limits".
      const limits = plan.ops.flatMap((o) => (o.op.kind === "limits" ? [o.op.limits] : []));
      expect(limits.some((l) => l.paused)).toBe(true);
      expect(limits.some((l) => l.ratePerSecond !== undefined)).toBe(true);
      expect(limits.at(-1)).toEqual({});
      // Every schedule is created, then deleted and created again under the same id, with the same instants.
      const creates = plan.ops.flatMap((o) =>
        o.op.kind === "schedule-create" || o.op.kind === "schedule-recreate" ? [o.op] : [],
      );
      for (const c of creates) {
        const twins = creates.filter((o) => o.id === c.id);
        expect(twins).toHaveLength(2);
        expect(twins[0]!.startAtMs).toBe(twins[1]!.startAtMs);
      }
      // The noisy tenant's batches dwarf the quiet tenant's single creates.
      const batch = plan.ops.find((o) => o.op.kind === "noisy-batch")!.op;
      expect(batch.kind === "noisy-batch" && batch.events.length).toBeGreaterThanOrEqual(150);
      expect(plan.apiSkews.length).toBeGreaterThan(0);
      expect(plan.dispatcherSkews).not.toEqual(plan.apiSkews);
      const { everyMs, forMs } = plan.profile.calm;
      for (const f of plan.faults) {
        expect(f.atMs % everyMs, `${profile.name} fault at ${f.atMs}`).toBeGreaterThanOrEqual(forMs);
        expect(f.atMs + f.durationMs, `${profile.name} fault at ${f.atMs}`).toBeLessThanOrEqual(
          Math.ceil(f.atMs / everyMs) * everyMs,
        );
      }
    }
  });
});
