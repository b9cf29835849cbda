import type { EventSpec, Op } from "./history.ts";
import type { PlannedOp } from "./plan.ts";
import type { TenantEvent, TenantPlannedOp } from "./plan-tenants.ts";
import { ID_PREFIX, type TenantName } from "./tenants.ts";

/**
 * The operation and the calling tenant of a planned step of the other tenants or the schedules
 * (plan-tenants.ts), at absolute times.
 */
export function tenantOp(p: TenantPlannedOp, startedAt: number): { op: Op; tenant: TenantName } {
  const spec = (tenant: TenantName, e: TenantEvent): EventSpec => ({
    id: `${ID_PREFIX[tenant]}-${e.n}`,
    version: 1,
    runAt: startedAt + e.runAtMs,
    behaviour: {},
  });
  switch (p.kind) {
    case "noisy-batch":
      return { op: { type: "batch", events: p.events.map((e) => spec("noisy", e)) }, tenant: "noisy" };
    case "quiet-create":
      return { op: { type: "create", event: spec("quiet", p.event) }, tenant: "quiet" };
    case "limits":
      return { op: { type: "limits", limits: p.limits }, tenant: "noisy" };
    case "read":
      return { op: { type: p.what }, tenant: "quiet" };
    case "schedule-create":
    case "schedule-recreate": {
      // On a whole second, so the instants are the same for every incarnation of the id.
      const startAt = Math.ceil((startedAt + p.startAtMs) / 1_000) * 1_000;
      return {
        op: {
          type: "schedule-create",
          id: p.id,
          generation: p.generation,
          startAt,
          endAt: startAt + (p.endAtMs - p.startAtMs),
          everySeconds: p.everySeconds,
        },
        tenant: "main",
      };
    }
    case "schedule-edit":
      return { op: { type: "schedule-edit", id: p.id, generation: p.generation }, tenant: "main" };
  }
}

const TENANT_KINDS = new Set<string>([
  "noisy-batch",
  "quiet-create",
  "limits",
  "read",
  "schedule-create",
  "schedule-edit",
  "schedule-recreate",
] satisfies TenantPlannedOp["kind"][]);

export function isTenantOp(p: PlannedOp): p is TenantPlannedOp {
  return TENANT_KINDS.has(p.kind);
}
