import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Command, InvalidArgumentError } from "commander";
import { check } from "./checker.ts";
import { readHistory } from "./history.ts";
import { PROFILES } from "./plan.ts";
import { formatReport } from "./report.ts";
import { runSoak } from "./soak.ts";

/**
 * `npm run chaos -- --minutes 10 --seed 7`: a soak with faults drawn from the seed, then the checker
 * over the whole history. `--check <history.jsonl>` re-checks a recorded history without running.
 * Exits 1 when the checker finds a violation.
 */
const int = (name: string) => (value: string) => {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0) throw new InvalidArgumentError(`${name} must be a whole number`);
  return n;
};
const program = new Command("chaos")
  .option(
    "--seed <n>",
    "seed of the fault schedule, the clock skews and the client plan (three tenants, schedules)",
    int("seed"),
    1,
  )
  .option("--minutes <n>", "length of the load (the long profile's faults and rates)", Number)
  .option(
    "--profile <name>",
    "short (40 s of load, as in npm test) or long (10 minutes unless --minutes; a noisy cycle every minute)",
    "long",
  )
  .option("--out <dir>", "run directory (default .hourglass/chaos/<seed>-<time>)")
  .option("--check <history>", "only check a recorded history.jsonl")
  .parse();
const opts = program.opts<{
  seed: number;
  minutes?: number;
  profile: string;
  out?: string;
  check?: string;
}>();
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

if (opts.check) {
  const report = check(readHistory(opts.check));
  process.stdout.write(`${formatReport(report, `history ${opts.check}`)}\n`);
  process.exit(report.violations.length === 0 ? 0 : 1);
}

const base = PROFILES[opts.profile as keyof typeof PROFILES];
if (!base) {
  process.stderr.write(`chaos: --profile must be short or long\n`);
  process.exit(2);
}
if (opts.minutes !== undefined && !(opts.minutes > 0 && opts.minutes <= 24 * 60)) {
  process.stderr.write(`chaos: --minutes must be a number of minutes above 0\n`);
  process.exit(2);
}
const profile = opts.minutes === undefined ? base : { ...base, loadMs: Math.round(opts.minutes * 60_000) };
const result = await runSoak({
  seed: opts.seed,
  profile,
  runDir: opts.out,
  log: (line) => process.stderr.write(`chaos: ${line}\n`),
});
const header = `seed ${opts.seed}, profile ${profile.name}, load ${profile.loadMs / 1000} s, wall ${Math.round(result.wallMs / 1000)} s, ${result.plan.faults.length} faults planned`;
const text = formatReport(result.report, header);
writeFileSync(join(result.runDir, "report.txt"), `${text}\n`);
writeFileSync(join(result.runDir, "report.json"), `${JSON.stringify(result.report, null, 2)}\n`);
process.stdout.write(`${text}\nhistory: ${join(result.runDir, "history.jsonl")}\n`);
process.exit(result.report.violations.length === 0 ? 0 : 1);
