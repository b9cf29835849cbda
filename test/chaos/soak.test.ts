import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PROFILES } from "../../scripts/chaos/plan.ts";
import { formatReport } from "../../scripts/chaos/report.ts";
import { runSoak } from "../../scripts/chaos/soak.ts";

/**
 * The short chaos profile (`npm run chaos -- --profile short --seed 8`): its own Redis, DynamoDB
 * Local and fauxqs on free ports (never the shared ones), the API, dispatcher and worker as three
 * processes, 40 s of load with every kind of fault once or more, then the checker over the whole
 * history. About two minutes.
 */
const SEED = 8;

/**
 * Bugs the soak has found that are not fixed yet; each has its deterministic test in
 * findings.test.ts (marked `it.fails`). Remove a rule from here when its bug is fixed.
 */
// Rules a known, unfixed bug still breaks; each is removed when its bug is fixed. The two the soak
// found first (a 404 cancel's tombstone, a DynamoDB outage spending webhook attempts) are fixed.
const KNOWN = new Set<string>([]);

describe("chaos soak, short profile", () => {
  it(`seed ${SEED}: no violation of invariants 1–8 under faults`, { timeout: 420_000 }, async () => {
    const result = await runSoak({
      seed: SEED,
      profile: PROFILES.short,
      runDir: join(".hourglass", "chaos", `test-${SEED}-${Date.now()}`),
    });
    const { report } = result;
    const text = formatReport(
      report,
      `seed ${SEED}, wall ${Math.round(result.wallMs / 1000)} s, ${result.runDir}`,
    );
    process.stdout.write(`${text}\n`);
    // Not vacuous: the faults happened, and the load ran through them.
    expect(Object.keys(report.faults).length, text).toBeGreaterThanOrEqual(6);
    // Modest, so an oversubscribed CI machine (a slow API answers fewer creates) still passes.
    expect(report.events.delivered, text).toBeGreaterThanOrEqual(20);
    expect(report.events.deliveries, text).toBeGreaterThanOrEqual(report.events.delivered);
    expect(report.operations["lease.acquire"], text).toBeGreaterThan(0);
    expect(
      report.violations.filter((v) => !KNOWN.has(v.rule)),
      text,
    ).toEqual([]);
  });
});
