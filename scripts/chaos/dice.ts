import { uniformInt } from "pure-rand/distribution/uniformInt";
import type { RandomGenerator } from "pure-rand/types/RandomGenerator";

/** Draws from one seeded stream: the plan is a pure function of the seed. */
export class Dice {
  constructor(private readonly rng: RandomGenerator) {}
  int(from: number, to: number): number {
    return uniformInt(this.rng, from, to);
  }
  chance(p: number): boolean {
    return this.int(0, 999_999) < p * 1_000_000;
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)]!;
  }
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
    const entries = (Object.entries(weights) as [K, number][]).filter(([, w]) => w > 0);
    let roll = this.int(
      1,
      entries.reduce((sum, [, w]) => sum + w, 0),
    );
    for (const [key, w] of entries) {
      roll -= w;
      if (roll <= 0) return key;
    }
    return entries[entries.length - 1]![0];
  }
  /** An exponential gap with this mean, cut at 4× the mean so a schedule never goes quiet for long. */
  gap(meanMs: number): number {
    const u = (this.int(1, 1_000_000) / 1_000_001) as number;
    return Math.round(Math.min(4 * meanMs, -Math.log(u) * meanMs));
  }
}
