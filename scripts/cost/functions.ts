import { MeasurementError } from "./errors.ts";
import type { LambdaMeasurement, LambdaRun } from "./measured.ts";
import { type CfnTemplate, hourglassFunctions, prop, resourcesOf, text } from "./template.ts";

export type Role = "api" | "dispatcher" | "worker";

export interface FunctionInfo {
  readonly role: Role;
  readonly memoryMb: number;
  readonly arm: boolean;
  readonly traced: boolean;
  readonly env: Readonly<Record<string, unknown>>;
}

const logicalIdOf = (value: unknown): string | undefined => {
  if (!value || typeof value !== "object") return undefined;
  const v = value as { Ref?: string; "Fn::GetAtt"?: [string, string] };
  return v.Ref ?? v["Fn::GetAtt"]?.[0];
};

/**
 * The template's three functions by what drives them: the queue's event source runs the worker,
 * the schedule runs the dispatcher, and the other one serves the API.
 */
export function functionsOf(template: CfnTemplate): Record<Role, FunctionInfo> {
  const ids = new Map(
    Object.entries(template.Resources)
      .filter(([, r]) => r.Type === "AWS::Lambda::Function")
      .map(([id, r]) => [r, id] as const),
  );
  const workerId = logicalIdOf(
    prop(resourcesOf(template, "AWS::Lambda::EventSourceMapping")[0] ?? { Type: "" }, "FunctionName"),
  );
  const schedule = resourcesOf(template, "AWS::Scheduler::Schedule")[0];
  const dispatcherId = logicalIdOf(schedule && prop<{ Arn?: unknown }>(schedule, "Target")?.Arn);
  const found: Partial<Record<Role, FunctionInfo>> = {};
  for (const { resource, env } of hourglassFunctions(template)) {
    const id = ids.get(resource);
    const role: Role = id === workerId ? "worker" : id === dispatcherId ? "dispatcher" : "api";
    found[role] = {
      role,
      memoryMb: prop<number>(resource, "MemorySize") ?? 128,
      arm: (prop<string[]>(resource, "Architectures") ?? []).includes("arm64"),
      traced: prop<{ Mode?: string }>(resource, "TracingConfig")?.Mode === "Active",
      env,
    };
  }
  for (const role of ["api", "dispatcher", "worker"] as const)
    if (!found[role]) throw new MeasurementError(`the template has no ${role} function`);
  return found as Record<Role, FunctionInfo>;
}

/** Dispatcher ticks a month, from the schedule's `rate(N unit)` expression. */
export function ticksPerMonth(template: CfnTemplate, secondsPerMonth: number): number {
  const schedule = resourcesOf(template, "AWS::Scheduler::Schedule")[0];
  const expression = schedule ? text(prop(schedule, "ScheduleExpression")) : "";
  const match = /^rate\((\d+) (minute|minutes|hour|hours|second|seconds)\)$/.exec(expression);
  if (!match) throw new MeasurementError(`cannot price the dispatcher schedule "${expression}"`);
  const unit = match[2]!.startsWith("second") ? 1 : match[2]!.startsWith("minute") ? 60 : 3600;
  return secondsPerMonth / (Number(match[1]) * unit);
}

/**
 * A measured figure at a rate of jobs a second: interpolated on the logarithm of the rate between
 * the two runs around it, and the nearest run's value outside the measured range.
 */
export function atRate(
  measurement: LambdaMeasurement,
  jobsPerSecond: number,
  pick: (run: LambdaRun) => number,
): number {
  const runs = [...measurement.runs].sort((a, b) => a.jobsPerSecond - b.jobsPerSecond);
  if (runs.length === 0) throw new MeasurementError("the Lambda measurement has no runs");
  const first = runs[0]!;
  const last = runs.at(-1)!;
  if (jobsPerSecond <= first.jobsPerSecond) return pick(first);
  if (jobsPerSecond >= last.jobsPerSecond) return pick(last);
  const upper = runs.findIndex((r) => r.jobsPerSecond >= jobsPerSecond);
  const a = runs[upper - 1]!;
  const b = runs[upper]!;
  const t = Math.log(jobsPerSecond / a.jobsPerSecond) / Math.log(b.jobsPerSecond / a.jobsPerSecond);
  return pick(a) + t * (pick(b) - pick(a));
}
