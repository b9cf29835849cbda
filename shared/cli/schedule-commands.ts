import { readFileSync } from "node:fs";
import { type Command, InvalidArgumentError, Option } from "commander";
import type { HourglassClient, ScheduleBody } from "../client/client.ts";
import type { ImportRow } from "./eventbridge-import.ts";
import { need } from "./options.ts";
import { details, type Output, table } from "./output.ts";
import { isNotFound, once } from "./repeats.ts";

type Context = (command: Command) => { client: HourglassClient; out: Output };

const count = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError("a whole number, 0 or more");
  return n;
};

const instant = (value: string) => {
  const time = Date.parse(value);
  if (Number.isNaN(time)) throw new InvalidArgumentError("an ISO-8601 time such as 2027-01-01T09:00:00Z");
  return new Date(time).toISOString();
};

/** `--payload '{"a":1}'` or `--payload @file.json`. */
const payload = (value: string): unknown => {
  const text = value.startsWith("@") ? readFileSync(value.slice(1), "utf8") : value;
  try {
    return JSON.parse(text);
  } catch {
    throw new InvalidArgumentError("JSON, or @file with JSON in it");
  }
};

/** `function=type` pairs for Lambda targets, such as `billing-run=billing.run`. */
const typeFor = (value: string, previous: Record<string, string> = {}) => {
  const match = /^([^=]+)=([a-z][a-z0-9._-]{0,63})$/.exec(value);
  if (!match) throw new InvalidArgumentError("function=type, such as billing-run=billing.run");
  return { ...previous, [match[1]!]: match[2]! };
};

function scheduleTable(schedules: readonly ScheduleBody[]): string {
  if (schedules.length === 0) return "(no schedules)";
  const rows = table({ head: ["id", "when", "zone", "type", "state", "next", "runs/skipped/missed"] });
  for (const s of schedules) {
    rows.push([
      s.id,
      s.cron ?? `every ${s.rate}`,
      s.timezone,
      s.event.type,
      s.state,
      s.nextAt ?? "",
      `${s.occurrences}/${s.skipped}/${s.missed}`,
    ]);
  }
  return rows.toString();
}

function importTable(rows: readonly ImportRow[]): string {
  const out = table({
    head: ["source", "hourglass id", "mapping", "result", "source disabled", "notes"],
  });
  for (const r of rows) {
    out.push([
      r.source,
      r.id ?? "",
      r.mapping,
      r.result,
      r.disabled ? "yes" : "",
      r.notes.join("; ").slice(0, 80),
    ]);
  }
  const totals = ["mapped", "changed", "refused", "skipped"].map(
    (m) => `${m} ${rows.filter((r) => r.mapping === m).length}`,
  );
  return `${rows.length === 0 ? "(no schedules)" : out.toString()}\n${totals.join(", ")}`;
}

/** `hourglass schedules create|ls|get|next|pause|resume|rm|import`. */
export function addScheduleCommands(root: Command, context: Context): void {
  const schedules = root
    .command("schedules")
    .description("recurring schedules (cron or rate, any time zone)");

  schedules
    .command("create")
    .description("create a schedule; the same id and body again is a no-op")
    .option("--id <id>", "schedule id (default: one the client picks)")
    .option("--cron <expression>", 'five fields, or six with seconds: "30 2 * * *"')
    .option("--rate <interval>", '"30 seconds", "5 minutes", "1 day"')
    .option("--tz <zone>", "IANA time zone", "UTC")
    .option("--start <time>", "no occurrence before", instant)
    .option("--end <time>", "no occurrence at or after", instant)
    .addOption(need(new Option("--type <type>", "event type each occurrence runs")))
    .option("--payload <json|@file>", "the events' payload", payload, null)
    .option("--max-attempts <n>", "attempts before the dead letters", count)
    .addOption(
      new Option("--overlap <policy>", "skip: never start while the previous runs").choices([
        "allow",
        "skip",
      ]),
    )
    .option("--jitter <seconds>", "spread each occurrence up to this late", count)
    .addOption(new Option("--catch-up <policy>", "after downtime").choices(["latest", "all", "none"]))
    .option("--paused", "create it paused")
    .action(async (options, command: Command) => {
      const { client, out } = context(command);
      const schedule = await client.createSchedule({
        ...(options.id && { id: options.id }),
        ...(options.cron && { cron: options.cron }),
        ...(options.rate && { rate: options.rate }),
        timezone: options.tz,
        ...(options.start && { startAt: options.start }),
        ...(options.end && { endAt: options.end }),
        event: {
          type: options.type,
          payload: options.payload,
          ...(options.maxAttempts !== undefined && { maxAttempts: options.maxAttempts }),
        },
        ...(options.overlap && { overlap: options.overlap }),
        ...(options.jitter !== undefined && { jitterSeconds: options.jitter }),
        ...(options.catchUp && { catchUp: options.catchUp }),
        ...(options.paused && { paused: true }),
      });
      out.print(
        schedule,
        () => `schedule ${schedule.id} ${schedule.state}; next ${schedule.nextAt ?? "none"}`,
      );
    });

  schedules
    .command("ls")
    .description("list schedules (every page)")
    .option("--type <type>", "only this event type")
    .addOption(new Option("--state <state>", "only this state").choices(["active", "paused", "ended"]))
    .action(async (options, command: Command) => {
      const { client, out } = context(command);
      const all: ScheduleBody[] = [];
      for await (const s of client.listAllSchedules({
        type: options.type,
        state: options.state,
        limit: 100,
      })) {
        all.push(s);
      }
      out.print({ schedules: all }, () => scheduleTable(all));
    });

  schedules
    .command("get <id>")
    .description("show one schedule")
    .action(async (id: string, _options, command: Command) => {
      const { client, out } = context(command);
      const schedule = await client.getSchedule(id);
      out.print(schedule, () => details(schedule));
    });

  schedules
    .command("next <id>")
    .description("the next occurrences, in UTC and in the schedule's zone")
    .option("--count <n>", "how many (1 to 100)", count, 10)
    .action(async (id: string, options, command: Command) => {
      const { client, out } = context(command);
      const occurrences = await client.nextOccurrences(id, options.count);
      out.print({ occurrences }, () => occurrences.map((o) => `${o.at}  ${o.local}`).join("\n") || "(none)");
    });

  schedules
    .command("pause <id>")
    .description("pause; unstarted occurrences are cancelled")
    .action(async (id: string, _options, command: Command) => {
      const { client, out } = context(command);
      await once(out, {
        subject: `schedule ${id}`,
        verb: "pause",
        // Ended: it fires no more, which is all a pause asks.
        satisfied: ["paused", "ended"],
        before: async () => (await client.getSchedule(id)).state,
        act: () => client.pauseSchedule(id),
        current: () => client.getSchedule(id),
        done: (s) => `paused ${s.id}`,
      });
    });
  schedules
    .command("resume <id>")
    .description("resume from the next occurrence after now")
    .action(async (id: string, _options, command: Command) => {
      const { client, out } = context(command);
      await once(out, {
        subject: `schedule ${id}`,
        verb: "resume",
        satisfied: ["active"],
        contradicting: ["ended"],
        before: async () => (await client.getSchedule(id)).state,
        act: () => client.resumeSchedule(id),
        current: () => client.getSchedule(id),
        done: (s) => `resumed ${s.id}; next ${s.nextAt ?? "none"}`,
      });
    });

  schedules
    .command("rm <id>")
    .description("delete; unstarted occurrences are cancelled; again is a no-op")
    .action(async (id: string, _options, command: Command) => {
      const { client, out } = context(command);
      try {
        const schedule = await client.deleteSchedule(id);
        out.print(schedule, () => `deleted ${schedule.id}`);
      } catch (error) {
        if (!isNotFound(error)) throw error;
        // A deleted schedule leaves nothing behind, so its absence is what a delete asks for; the
        // server cannot tell "deleted before" from "never there", and neither can this message.
        out.print({ id, deleted: true }, () => `schedule ${id}: already deleted (or never there)`);
      }
    });

  schedules
    .command("import")
    .description("copy EventBridge Scheduler schedules; safe to run again")
    .addOption(
      need(new Option("--from-eventbridge", "read schedules from EventBridge Scheduler (AWS credentials)")),
    )
    .option("--group <name>", "only this schedule group")
    .option("--prefix <prefix>", "only names starting with this")
    .option("--dry-run", "map and report; create and disable nothing")
    .option("--disable-source", "disable each source schedule once its Hourglass twin exists")
    .option("--type-for <function=type>", "event type for a Lambda target (repeatable)", typeFor, {})
    .addOption(new Option("--aws-region <region>", "region of the schedules").env("AWS_REGION"))
    .option("--no-progress", "no progress bar")
    .action(async (options, command: Command) => {
      const { client, out } = context(command);
      // Loaded only here: every other command starts without the Scheduler SDK.
      const { SchedulerClient } = await import("@aws-sdk/client-scheduler");
      const { importFromEventBridge } = await import("./eventbridge-import.ts");
      const scheduler = new SchedulerClient(options.awsRegion ? { region: options.awsRegion } : {});
      const rows = await importFromEventBridge(scheduler, client, {
        group: options.group,
        prefix: options.prefix,
        dryRun: Boolean(options.dryRun),
        disableSource: Boolean(options.disableSource),
        typeFor: options.typeFor,
        progress: options.progress !== false && !out.json && process.stderr.isTTY === true,
      });
      scheduler.destroy();
      out.print({ schedules: rows }, () => importTable(rows));
      if (rows.some((r) => r.result === "failed" || r.result === "conflict")) process.exitCode = 1;
    });
}
