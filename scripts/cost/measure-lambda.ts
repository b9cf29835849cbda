/**
 * Measures what docs/cost.md prices for Lambda: invocations and billed milliseconds per job of the
 * three functions, in the AWS-shaped mode with AWS latencies (the deployed bundles, the template's
 * event source batching and the dispatcher's one-minute cadence), at steady 1, 10 and 100 jobs a
 * second. Writes `scripts/cost/lambda-measured.json`, which `npm run cost` reads.
 *
 *   npx tsx scripts/cost/measure-lambda.ts [--profile lean|standard] [--rates 1,10,100]
 *
 * Jobs are webhooks created in batches (one request a second carrying that second's jobs), due
 * 150 s ahead: beyond the 120 s look-ahead, so the dispatcher claims and sends them as it would a
 * job due tomorrow. A run takes about 12 minutes.
 */
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { Command, Option } from "commander";
import { awsSteady, startAwsShapedBench } from "../../bench/aws-shaped.ts";
import { OPERATOR_KEY } from "../aws-shaped/harness.ts";
import type { LambdaFunction } from "../aws-shaped/lambda-function.ts";
import { LAMBDA_MEASURED_FILE, type LambdaMeasurement, type LambdaRun } from "./measured.ts";

const options = new Command()
  .addOption(new Option("--profile <profile>").choices(["standard", "lean"]).default("lean"))
  .option("--rates <list>", "jobs a second, comma-separated", "1,10,100")
  .parse()
  .opts<{ profile: "standard" | "lean"; rates: string }>();

/** Seconds of steady load per rate: about 100 jobs at least, and no more than a few thousand. */
const secondsAt = (rate: number) => (rate <= 1 ? 120 : rate <= 10 ? 60 : 30);
const AHEAD_MS = 150_000;

interface Tally {
  /** Wall time of each invocation that returned, ms (cold starts included: Lambda bills the init phase). */
  durations: number[];
  /** Invocations that failed here (a timeout or crash of this loaded machine): retried, so not counted as work. */
  failed: number;
}

function tally(fn: LambdaFunction): Tally {
  const counted: Tally = { durations: [], failed: 0 };
  const invoke = fn.invoke.bind(fn);
  fn.invoke = async (event: unknown) => {
    const started = performance.now();
    const result = await invoke(event).catch((error: unknown) => {
      counted.failed++;
      throw error;
    });
    counted.durations.push(Math.ceil(performance.now() - started));
    return result;
  };
  return counted;
}

/**
 * The median duration. On Lambda each environment has its own CPU; here 50 share two cores with
 * the stand-ins, so the mean carries this machine's load tail (timeouts included), not Lambda's.
 */
const median = (values: readonly number[]) => {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};
const mean = (values: readonly number[]) =>
  values.length ? values.reduce((a, b) => a + b, 0) / values.length : 0;

// The client signs as the operator, as `hourglass … --aws` would.
process.env.AWS_ACCESS_KEY_ID ??= OPERATOR_KEY.accessKeyId;
process.env.AWS_SECRET_ACCESS_KEY ??= OPERATOR_KEY.secretAccessKey;
const bench = await startAwsShapedBench(options.profile);
try {
  const roles = ["api", "dispatcher", "worker"] as const;
  const tallies = Object.fromEntries(
    roles.map((role) => {
      const fn = bench.running.functions[role];
      if (!fn) throw new Error(`the template has no ${role} function`);
      return [role, tally(fn)];
    }),
  ) as Record<(typeof roles)[number], Tally>;
  const runs: LambdaRun[] = [];
  for (const rate of options.rates.split(",").map(Number)) {
    for (const t of Object.values(tallies)) Object.assign(t, { durations: [], failed: 0 });
    const started = Date.now();
    const result = await awsSteady(bench, `cost-${rate}`, rate, secondsAt(rate), AHEAD_MS);
    const jobs = result.delivered;
    if (jobs < result.events)
      throw new Error(`${result.events - jobs} of ${result.events} jobs at ${rate}/s never ran`);
    const per = (t: Tally) => ({
      invocationsPerJob: t.durations.length / jobs,
      msPerInvocation: median(t.durations),
      meanMs: mean(t.durations),
      failed: t.failed,
    });
    runs.push({
      jobsPerSecond: rate,
      jobs,
      minutes: (Date.now() - started) / 60_000,
      api: { ...per(tallies.api), jobsPerRequest: rate },
      worker: per(tallies.worker),
      dispatcher: {
        invocations: tallies.dispatcher.durations.length,
        msPerInvocation: median(tallies.dispatcher.durations),
        meanMs: mean(tallies.dispatcher.durations),
        failed: tallies.dispatcher.failed,
      },
      loadAverage: Number(loadavg()[0]!.toFixed(1)),
    });
    console.error(`[cost] ${rate}/s: ${JSON.stringify(runs.at(-1))}`);
  }
  const measurement: LambdaMeasurement = {
    measuredAt: new Date().toISOString(),
    profile: options.profile,
    command: `npx tsx scripts/cost/measure-lambda.ts --profile ${options.profile} --rates ${options.rates}`,
    runs,
  };
  writeFileSync(LAMBDA_MEASURED_FILE, `${JSON.stringify(measurement, null, 2)}\n`);
} finally {
  await bench.stop();
}
