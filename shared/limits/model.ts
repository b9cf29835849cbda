import { z } from "zod";

/** Why flow control holds an event back (its view's and the stats' `heldBy`). */
import type { HeldBy } from "../model/event.ts";

export type { HeldBy } from "../model/event.ts";
export const HELD_BY: readonly HeldBy[] = ["paused", "rate", "concurrency"];

/** One type's limits, for one tenant. Absent fields mean no limit of that kind. */
export interface TypeLimits {
  readonly paused: boolean;
  readonly ratePerSecond?: number | undefined;
  /** Starts allowed at once above the rate (the bucket's size); defaults to the rate, at least 1. */
  readonly burst?: number | undefined;
  readonly maxConcurrency?: number | undefined;
}

/** Limits as stored: versioned, so writes can be conditional (ETag / If-Match). */
export interface StoredLimits extends TypeLimits {
  readonly tenant: string;
  readonly type: string;
  /** 0 for a type that never had limits set; each write adds one. */
  readonly version: number;
  /** Epoch ms of the last write; 0 when never written. */
  readonly updatedAt: number;
}

/**
 * The slowest rate: one start in about 11.6 days. Below it a rate is not a limit but a pause, and
 * the numbers stop fitting where they go: DynamoDB stores no magnitude under 1e-130 (a 503 for the
 * caller's typo), and the bucket's expiry, burst × 1000 / rate ms, must stay under 1e17 to reach
 * Redis as an integer (Lua formats numbers with 17 digits): past it every admission of the tenant
 * failed. With `burst` at most 10,000,000 this floor keeps it at most 1e16.
 */
export const MIN_RATE_PER_SECOND = 0.000001;

/** The body of `PUT /v1/types/{type}/limits`: the whole set of limits, replacing the previous one. */
export const limitsInput = z
  .object({
    paused: z.boolean().optional(),
    ratePerSecond: z
      .number()
      .min(
        MIN_RATE_PER_SECOND,
        `at least ${MIN_RATE_PER_SECOND} (one start in about 11.6 days); use paused to stop a type`,
      )
      .max(1_000_000)
      .optional(),
    burst: z.number().int().min(1).max(10_000_000).optional(),
    maxConcurrency: z.number().int().min(1).max(1_000_000).optional(),
  })
  .strict()
  .refine((limits) => limits.burst === undefined || limits.ratePerSecond !== undefined, {
    message: "burst needs ratePerSecond",
    path: ["burst"],
  });

export type LimitsInput = z.infer<typeof limitsInput>;

export function noLimits(tenant: string, type: string): StoredLimits {
  return { tenant, type, paused: false, version: 0, updatedAt: 0 };
}

/** Has any limit (a paused type counts). */
export function isLimited(limits: TypeLimits): boolean {
  return limits.paused || limits.ratePerSecond !== undefined || limits.maxConcurrency !== undefined;
}

/** `tenant|type`: how the index names a group of events that share limits. */
export function groupOf(tenant: string, type: string): string {
  return `${tenant}|${type}`;
}

/** The inverse of `groupOf`: types never contain `|`, so the last one splits. */
export function parseGroup(group: string): { tenant: string; type: string } {
  const bar = group.lastIndexOf("|");
  return { tenant: group.slice(0, bar), type: group.slice(bar + 1) };
}
