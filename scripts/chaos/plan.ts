import { xoroshiro128plus } from "pure-rand/generator/xoroshiro128plus";
import { Dice } from "./dice.ts";
import type { Behaviour, FaultKind } from "./history.ts";
import { planTenantOps, type TenantLoad, type TenantPlannedOp } from "./plan-tenants.ts";

/**
 * Everything the soak will do, drawn from its seed before it starts: the fault schedule, the
 * worker's clock skews and the client's operations. Times are offsets from the start of the load,
 * so the same seed gives the same schedule on any machine (only the timing jitter of a busy
 * machine differs); a failure can be replayed with its seed.
 */

export interface Profile {
  readonly name: string;
  /** How long the client load and the faults last. */
  readonly loadMs: number;
  /** Longest wait after the load for every event to settle before the final reads. */
  readonly quietMs: number;
  /** Mean client operations per second outside bursts. */
  readonly opsPerSecond: number;
  /** A burst (a batch create and a run of single creates) about this often. */
  readonly burstEveryMs: number;
  /** Mean gap between two faults. */
  readonly faultGapMs: number;
  /** Start with every fault kind once, in a seeded order, before drawing by weight. */
  readonly everyKind: boolean;
  /** Relative weights of the fault kinds; 0 leaves a kind out. */
  readonly faultWeights: Readonly<Record<Exclude<FaultKind, `${string}-skew`>, number>>;
  /**
   * No fault starts or lasts within [k × everyMs, k × everyMs + forMs): the quiet tenant's lateness
   * is judged there (elsewhere faults excuse almost all of it), and window 0 is its baseline.
   */
  readonly calm: { readonly everyMs: number; readonly forMs: number };
  /** The other tenants' load and the schedules. */
  readonly tenants: TenantLoad;
}

export const PROFILES: Readonly<Record<"short" | "long", Profile>> = {
  short: {
    name: "short",
    loadMs: 40_000,
    quietMs: 60_000,
    opsPerSecond: 4,
    burstEveryMs: 20_000,
    faultGapMs: 5_000,
    everyKind: true,
    faultWeights: {
      "kill-api": 2,
      "kill-dispatcher": 2,
      "kill-worker": 2,
      "redis-stop": 2,
      "redis-flushall": 1,
      "sqs-restart": 1,
      "dynamodb-restart": 1,
    },
    calm: { everyMs: 40_000, forMs: 5_000 },
    tenants: {
      noisyFromMs: 5_000,
      noisyCycleMs: 40_000,
      noisyBatch: 150,
      noisyBurst: 300,
      quietEveryMs: 800,
      readEveryMs: 2_000,
      scheduleEveryMs: 15_000,
    },
  },
  long: {
    name: "long",
    loadMs: 600_000,
    quietMs: 60_000,
    opsPerSecond: 10,
    burstEveryMs: 30_000,
    faultGapMs: 8_000,
    everyKind: true,
    faultWeights: {
      "kill-api": 3,
      "kill-dispatcher": 3,
      "kill-worker": 3,
      "redis-stop": 3,
      "redis-flushall": 2,
      "sqs-restart": 2,
      "dynamodb-restart": 1,
    },
    calm: { everyMs: 60_000, forMs: 25_000 },
    tenants: {
      // 10 s before each calm window but the first (the baseline).
      noisyFromMs: 50_000,
      noisyCycleMs: 60_000,
      noisyBatch: 400,
      noisyBurst: 1_200,
      quietEveryMs: 500,
      readEveryMs: 1_500,
      scheduleEveryMs: 10_000,
    },
  },
};

export interface FaultStep {
  readonly atMs: number;
  readonly kind: Exclude<FaultKind, `${string}-skew`>;
  /** How long the process stays dead or Redis stays stopped. */
  readonly durationMs: number;
}

export type PlannedOp =
  | { readonly kind: "create"; readonly event: PlannedEvent }
  | { readonly kind: "batch"; readonly events: readonly PlannedEvent[] }
  | { readonly kind: "cancel" | "get" | "replay"; readonly target: number }
  | { readonly kind: "reschedule"; readonly target: number; readonly runAtMs: number }
  | {
      readonly kind: "lease";
      readonly action: "acquire" | "renew" | "release";
      readonly name: string;
      readonly owner: string;
      readonly ttlSeconds: number;
    }
  | { readonly kind: "receipt"; readonly sku: string; readonly quantity: number }
  | {
      readonly kind: "hold";
      readonly reservation: number;
      readonly items: readonly { sku: string; quantity: number }[];
      readonly holdSeconds: number;
    }
  | { readonly kind: "confirm" | "unhold"; readonly reservation: number }
  | TenantPlannedOp;

/** An event to create: `n` names it (e<n>), and a repeat reuses an earlier one's `n`. */
export interface PlannedEvent {
  readonly n: number;
  readonly version: number;
  readonly runAtMs: number;
  readonly behaviour: Behaviour;
}

export interface Plan {
  readonly seed: number;
  readonly profile: Profile;
  readonly faults: readonly FaultStep[];
  /** The worker's clock offset at each of its starts (ms, ±1 s), used in turn. */
  readonly skews: readonly number[];
  /** The API's and the dispatchers' clock offsets at each of their starts, likewise. */
  readonly apiSkews: readonly number[];
  readonly dispatcherSkews: readonly number[];
  readonly ops: readonly { readonly atMs: number; readonly op: PlannedOp }[];
}

export const LEASE_NAMES = ["chaos-a", "chaos-b"];
export const LEASE_OWNERS = ["owner-1", "owner-2", "owner-3"];
export const SKUS = ["sku-red", "sku-blue"];

export function makePlan(seed: number, profile: Profile): Plan {
  // Independent streams, so a change in how many operations are drawn never moves the faults.
  const faultDice = new Dice(xoroshiro128plus(seed));
  const skewDice = new Dice(xoroshiro128plus(seed ^ 0x5eed));
  const opDice = new Dice(xoroshiro128plus(seed ^ 0x0b5));
  const tenantDice = new Dice(xoroshiro128plus(seed ^ 0x7e4a));
  const roleSkewDice = new Dice(xoroshiro128plus(seed ^ 0xc10c));
  return {
    seed,
    profile,
    faults: planFaults(faultDice, profile),
    skews: Array.from({ length: 64 }, () => skewDice.int(-1_000, 1_000)),
    apiSkews: Array.from({ length: 64 }, () => roleSkewDice.int(-1_000, 1_000)),
    dispatcherSkews: Array.from({ length: 64 }, () => roleSkewDice.int(-1_000, 1_000)),
    ops: [...planOps(opDice, profile), ...planTenantOps(tenantDice, profile.tenants, profile.loadMs)].sort(
      (a, b) => a.atMs - b.atMs,
    ),
  };
}

function planFaults(dice: Dice, profile: Profile): FaultStep[] {
  const faults: FaultStep[] = [];
  // The first fault waits until the load is under way; the last ends before the load does.
  let at = 3_000 + dice.gap(profile.faultGapMs / 2);
  const first = profile.everyKind
    ? shuffle(
        dice,
        (Object.keys(profile.faultWeights) as FaultStep["kind"][]).filter((k) => profile.faultWeights[k] > 0),
      )
    : [];
  while (at < profile.loadMs - 5_000) {
    const kind = first.shift() ?? dice.weighted(profile.faultWeights);
    const durationMs =
      kind === "redis-stop"
        ? dice.int(300, 3_000)
        : kind.startsWith("kill-")
          ? dice.int(100, 3_000)
          : kind === "sqs-restart"
            ? dice.int(100, 1_500)
            : 0;
    // Moved past a calm window it would start in or reach into (a restart of DynamoDB Local
    // takes seconds however long its planned duration).
    const { everyMs, forMs } = profile.calm;
    const windowStart = Math.ceil(at / everyMs) * everyMs;
    const into = at % everyMs < forMs || at + Math.max(durationMs, 3_000) > windowStart;
    if (into)
      at = (at % everyMs < forMs ? Math.floor(at / everyMs) : Math.ceil(at / everyMs)) * everyMs + forMs;
    if (at >= profile.loadMs - 5_000) break;
    faults.push({ atMs: at, kind, durationMs });
    at += durationMs + dice.gap(profile.faultGapMs);
  }
  return faults;
}

function shuffle<T>(dice: Dice, items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = dice.int(0, i);
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

function behaviour(dice: Dice): Behaviour {
  const roll = dice.int(1, 100);
  if (roll <= 62) return {};
  if (roll <= 74) return { slowMs: dice.int(100, 1_200) };
  if (roll <= 86) return { fail: dice.int(1, 2) };
  if (roll <= 92) return { hang: 1 };
  if (roll <= 96) return { gone: true };
  return { fail: 99 };
}

/** When an event created at `atMs` should run: mostly soon, some overdue, some beyond the look-ahead. */
function runAtFor(dice: Dice, atMs: number, profile: Profile): number {
  const roll = dice.int(1, 100);
  const delay =
    roll <= 10
      ? -dice.int(0, 3_000)
      : roll <= 20
        ? dice.int(0, 999)
        : roll <= 60
          ? dice.int(1_000, 5_000)
          : roll <= 90
            ? dice.int(5_000, 15_000)
            : dice.int(15_000, 30_000);
  return Math.min(atMs + delay, profile.loadMs + 2_000);
}

function planOps(dice: Dice, profile: Profile): { atMs: number; op: PlannedOp }[] {
  const ops: { atMs: number; op: PlannedOp }[] = [];
  const events: PlannedEvent[] = [];
  let reservations = 0;
  let nextBurst = profile.burstEveryMs / 2;
  const newEvent = (atMs: number): PlannedEvent => {
    const event = {
      n: events.length,
      version: 1,
      runAtMs: runAtFor(dice, atMs, profile),
      behaviour: behaviour(dice),
    };
    events.push(event);
    return event;
  };
  /** A repeat of an earlier event: the same body (idempotent) or, sometimes, a different one. */
  const repeat = (): PlannedEvent | undefined => {
    if (events.length === 0) return undefined;
    const earlier = dice.pick(events);
    return dice.chance(0.3) ? { ...earlier, version: 2, behaviour: { slowMs: 1 } } : earlier;
  };
  const target = () => dice.int(Math.max(0, events.length - 60), events.length - 1);

  // Three receipts up front, so holds have stock to compete for.
  for (const sku of SKUS) ops.push({ atMs: 0, op: { kind: "receipt", sku, quantity: 6 } });
  let at = 0;
  while (at < profile.loadMs) {
    at += dice.gap(1_000 / profile.opsPerSecond);
    if (at >= profile.loadMs) break;
    if (at >= nextBurst) {
      nextBurst += profile.burstEveryMs;
      const batch: PlannedEvent[] = [];
      const size = dice.int(20, 60);
      for (let i = 0; i < size; i++) batch.push((i % 10 === 9 && repeat()) || newEvent(at));
      ops.push({ atMs: at, op: { kind: "batch", events: batch } });
      for (let i = 0; i < 15; i++)
        ops.push({ atMs: at + i * 20, op: { kind: "create", event: newEvent(at) } });
      continue;
    }
    const roll = dice.int(1, 100);
    let op: PlannedOp;
    if (roll <= 40 || events.length === 0) op = { kind: "create", event: newEvent(at) };
    else if (roll <= 46) op = { kind: "create", event: repeat()! };
    else if (roll <= 54) op = { kind: "cancel", target: target() };
    else if (roll <= 62)
      op = {
        kind: "reschedule",
        target: target(),
        runAtMs: Math.min(at + dice.int(300, 12_000), profile.loadMs + 2_000),
      };
    else if (roll <= 66)
      op = {
        kind: "replay",
        target: dice.pick(
          events
            .filter((e) => e.behaviour.gone || e.behaviour.fail === 99)
            .map((e) => e.n)
            .concat(target()),
        ),
      };
    else if (roll <= 72) op = { kind: "get", target: target() };
    else if (roll <= 84)
      op = {
        kind: "lease",
        action: dice.pick(["acquire", "acquire", "renew", "release"] as const),
        name: dice.pick(LEASE_NAMES),
        owner: dice.pick(LEASE_OWNERS),
        ttlSeconds: dice.int(1, 3),
      };
    else if (roll <= 86) op = { kind: "receipt", sku: dice.pick(SKUS), quantity: dice.int(1, 3) };
    else if (roll <= 94) {
      const items = dice.chance(0.3)
        ? SKUS.map((sku) => ({ sku, quantity: dice.int(1, 2) }))
        : [{ sku: dice.pick(SKUS), quantity: dice.int(1, 3) }];
      op = { kind: "hold", reservation: reservations++, items, holdSeconds: dice.int(1, 6) };
    } else if (reservations > 0) {
      op = {
        kind: dice.chance(0.6) ? "confirm" : "unhold",
        reservation: dice.int(Math.max(0, reservations - 10), reservations - 1),
      };
    } else op = { kind: "create", event: newEvent(at) };
    ops.push({ atMs: at, op });
  }
  return ops.sort((a, b) => a.atMs - b.atMs);
}
