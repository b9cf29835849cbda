import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/**
 * What one job costs in requests, per path, as measured on the real local stack. The DynamoDB
 * units and the SQS sends are the figures `test/integration/requests-per-job.test.ts` pins (it
 * reads them from here, so the bill and the test cannot drift apart); Lambda's figures come from
 * the AWS-shaped run (`scripts/cost/measure-lambda.ts`).
 */
export type Path = "single" | "batch" | "retry" | "cancel";
export const PATHS: readonly Path[] = ["single", "batch", "retry", "cancel"];

export interface PathRequests {
  /** Write units on the events table, create → final status (the table and its index entries). */
  readonly wru: number;
  /** Read units: the dispatcher's strongly consistent payload read (≤ 4 KB). */
  readonly rru: number;
  /**
   * SendMessageBatch requests per job: ten a request when each claim holds ten or more (the
   * dispatcher's one-minute tick on AWS claims a minute of jobs at once); a retry due within the
   * look-ahead is sent on its own.
   */
  readonly sqsSends: number;
  /** Worker runs per job: every attempt is a message the worker receives, runs and deletes. */
  readonly attempts: number;
  /** API requests per job: a batch carries up to 500; a cancel is a second call. */
  readonly apiRequests: number;
  /** The transitions a job on this path goes through, each a notification when the deployment asks for it. */
  readonly transitions: readonly string[];
}

const LIFE = ["scheduled", "dispatched", "started", "succeeded"] as const;

export const REQUESTS_PER_JOB: Readonly<Record<Path, PathRequests>> = {
  single: { wru: 5, rru: 1, sqsSends: 0.1, attempts: 1, apiRequests: 1, transitions: LIFE },
  batch: { wru: 5, rru: 1, sqsSends: 0.1, attempts: 1, apiRequests: 1 / 500, transitions: LIFE },
  retry: {
    wru: 8,
    rru: 1,
    sqsSends: 1.1,
    attempts: 2,
    apiRequests: 1,
    transitions: ["scheduled", "dispatched", "started", "retrying", "dispatched", "started", "succeeded"],
  },
  cancel: {
    wru: 5,
    rru: 0,
    sqsSends: 0,
    attempts: 0,
    apiRequests: 2,
    transitions: ["scheduled", "cancelled"],
  },
};

/**
 * Per dispatcher tick, whatever the volume: its group leases (conditional updates) and the
 * recovery sweep's and schedule probes' queries, as counted by the request-count test's runs
 * (docs/cost.md before issue 34: 8 updates and 16 queries a minute). An estimate, not a pin.
 */
export const PER_TICK = { wru: 8, rru: 16 } as const;

/** One function's invocations in a run: `msPerInvocation` is the median wall time, the one billed here. */
export interface InvocationFigures {
  readonly msPerInvocation: number;
  readonly meanMs: number;
  /** Invocations that timed out or crashed on the loaded machine (retried; not counted as work). */
  readonly failed: number;
}

export interface LambdaRun {
  readonly jobsPerSecond: number;
  readonly jobs: number;
  readonly minutes: number;
  readonly api: InvocationFigures & { readonly invocationsPerJob: number; readonly jobsPerRequest: number };
  readonly worker: InvocationFigures & { readonly invocationsPerJob: number };
  readonly dispatcher: InvocationFigures & { readonly invocations: number };
  /** The machine's one-minute load average at the end of the run (2 cores). */
  readonly loadAverage: number;
}

export interface LambdaMeasurement {
  readonly measuredAt: string;
  readonly profile: string;
  readonly command: string;
  readonly runs: readonly LambdaRun[];
}

export const LAMBDA_MEASURED_FILE = fileURLToPath(new URL("./lambda-measured.json", import.meta.url));

export function lambdaMeasurement(): LambdaMeasurement {
  if (!existsSync(LAMBDA_MEASURED_FILE))
    throw new Error(`${LAMBDA_MEASURED_FILE} is missing: run npx tsx scripts/cost/measure-lambda.ts`);
  return JSON.parse(readFileSync(LAMBDA_MEASURED_FILE, "utf8")) as LambdaMeasurement;
}
