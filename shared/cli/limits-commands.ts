import { type Command, InvalidArgumentError } from "commander";
import type { HourglassClient, VersionedLimits } from "../client/client.ts";
import type { LimitsInput } from "../limits/model.ts";
import { type Output, table } from "./output.ts";

type Context = (command: Command) => { client: HourglassClient; out: Output };

/** A positive number, or `none` to remove that limit (kept as the string: commander stores a null parse as the raw text). */
const NONE = "none";
const limit = (integer: boolean) => (value: string) => {
  if (value === NONE) return NONE;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n)))
    throw new InvalidArgumentError(integer ? "a whole number above 0, or none" : "a number above 0, or none");
  return n;
};

function describe({ limits, etag }: VersionedLimits): string {
  const rows = table();
  rows.push(
    { type: limits.type },
    { paused: limits.paused ? "yes: events stay scheduled (heldBy paused)" : "no" },
    { ratePerSecond: limits.ratePerSecond === undefined ? "no limit" : String(limits.ratePerSecond) },
    {
      burst:
        limits.burst === undefined
          ? limits.ratePerSecond === undefined
            ? ""
            : "= rate"
          : String(limits.burst),
    },
    { maxConcurrency: limits.maxConcurrency === undefined ? "no limit" : String(limits.maxConcurrency) },
    { version: `${limits.version} (ETag ${etag})` },
  );
  return rows.toString();
}

/** The writable part of a type's limits (what a PUT takes). */
function settable(limits: VersionedLimits["limits"]): LimitsInput {
  const { type: _type, version: _version, updatedAt: _updatedAt, ...input } = limits;
  return input;
}

/** `hourglass limits get|set|pause|resume TYPE`: the caller's own limits for one event type. */
export function addLimitsCommands(root: Command, context: Context): void {
  const limits = root
    .command("limits")
    .description("flow control per event type: pause, rate per second, burst, max concurrency");

  limits
    .command("get <type>")
    .description("show a type's limits and their version")
    .action(async (type: string, _options, command: Command) => {
      const { client, out } = context(command);
      const result = await client.typeLimits(type);
      out.print({ ...result.limits, etag: result.etag }, () => describe(result));
    });

  limits
    .command("set <type>")
    .description("change a type's limits; the options not given keep their value (none removes one)")
    .option("--rate <n|none>", "starts per second", limit(false))
    .option("--burst <n|none>", "starts at once above the rate (default: the rate)", limit(true))
    .option("--max-concurrency <n|none>", "running at once", limit(true))
    .option("--replace", "start from no limits instead of the current ones")
    .option("--if-match <etag>", "only if the limits are still at this version (else 412)")
    .action(async (type: string, options, command: Command) => {
      const { client, out } = context(command);
      const change = (current: LimitsInput): LimitsInput => {
        const next: Record<string, unknown> = options.replace ? {} : { ...current };
        const apply = (field: keyof LimitsInput, value: number | typeof NONE | undefined) => {
          if (value === NONE) delete next[field];
          else if (value !== undefined) next[field] = value;
        };
        apply("ratePerSecond", options.rate);
        apply("burst", options.burst);
        apply("maxConcurrency", options.maxConcurrency);
        if (next.ratePerSecond === undefined) delete next.burst;
        return next as LimitsInput;
      };
      const result = options.ifMatch
        ? await client.setTypeLimits(type, change(settable((await client.typeLimits(type)).limits)), {
            ifMatch: options.ifMatch,
          })
        : await client.updateTypeLimits(type, change);
      out.print({ ...result.limits, etag: result.etag }, () => describe(result));
    });

  limits
    .command("pause <type>")
    .description("stop starting events of a type; they are still accepted and stay scheduled")
    .action(async (type: string, _options, command: Command) => {
      const { client, out } = context(command);
      const result = await client.pauseType(type);
      out.print(
        { ...result.limits, etag: result.etag },
        () => `paused ${type} (version ${result.limits.version})`,
      );
    });

  limits
    .command("resume <type>")
    .description("let a paused type run again: overdue events run in due order")
    .action(async (type: string, _options, command: Command) => {
      const { client, out } = context(command);
      const result = await client.resumeType(type);
      out.print(
        { ...result.limits, etag: result.etag },
        () => `resumed ${type} (version ${result.limits.version})`,
      );
    });
}
