import { readFileSync } from "node:fs";
import { Command, InvalidArgumentError, Option } from "commander";
import { TimeoutError } from "ky";
import ms from "ms";
import { type EventBody, HourglassApiError, HourglassClient } from "../client/client.ts";
import { SigningRegionError } from "../client/signing-region.ts";
import { addDashboardCommand } from "./dashboard-command.ts";
import { importEvents } from "./import.ts";
import { addLedgerCommands } from "./ledger-commands.ts";
import { addLimitsCommands } from "./limits-commands.ts";
import { addOpsCommands } from "./ops-commands.ts";
import { checkRequiredOptions, need } from "./options.ts";
import { eventDetails, eventTable, output, statsReport } from "./output.ts";
import { once, StateConflictError } from "./repeats.ts";
import { addScheduleCommands } from "./schedule-commands.ts";

interface Globals {
  url: string;
  token?: string;
  sigv4?: boolean;
  region?: string;
  json?: boolean;
}

function duration(value: string): number {
  const parsed = ms(value as ms.StringValue);
  if (typeof parsed !== "number" || Number.isNaN(parsed) || parsed < 0) {
    throw new InvalidArgumentError('a duration such as "90s", "15m", "2h" or "3d"');
  }
  return parsed / 1000;
}

function instant(value: string): string {
  const time = Date.parse(value);
  if (Number.isNaN(time)) throw new InvalidArgumentError("an ISO-8601 time such as 2027-01-01T09:00:00Z");
  return new Date(time).toISOString();
}

/** What `--payload` holds, per built-in type; printed by `schedule --help` and when it is missing. */
export const PAYLOAD_HELP = [
  "the event's payload: JSON, or @file with JSON in it (see examples/webhook.json).",
  '  webhook: { "url": "https://…", "method"?: "POST", "headers"?: {…}, "body"?: any JSON }',
  "  your own types: whatever their handler's schema asks for (functions/handlers.ts)",
].join("\n");

/** `--payload '{"a":1}'` or `--payload @file.json`. */
function payload(value: string): unknown {
  let text = value;
  if (value.startsWith("@")) {
    const file = value.slice(1);
    try {
      text = readFileSync(file, "utf8");
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      throw new InvalidArgumentError(
        code === "ENOENT" ? `no file ${file}` : `cannot read ${file} (${code ?? (error as Error).message})`,
      );
    }
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new InvalidArgumentError(
      value.startsWith("@") ? `${value.slice(1)} does not hold JSON` : "JSON, or @file with JSON in it",
    );
  }
}

/** A whole number, 1 or more (`--limit`, `--batch`, `--max-attempts`). */
function count(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError("a whole number, 1 or more");
  return n;
}

function when(options: { in?: number; at?: string }) {
  if ((options.in === undefined) === (options.at === undefined)) {
    throw new InvalidArgumentError("give exactly one of --in and --at");
  }
  return options.at !== undefined ? { runAt: options.at } : { delaySeconds: options.in };
}

/** The `hourglass` command line. */
export function program(): Command {
  const root = new Command("hourglass")
    .description("Schedule, inspect and cancel Hourglass events")
    .addOption(
      new Option("--url <url>", "the Hourglass API").env("HOURGLASS_URL").default("http://127.0.0.1:3000"),
    )
    .addOption(new Option("--token <token>", "bearer token").env("HOURGLASS_TOKEN"))
    .option("--sigv4", "sign requests with AWS SigV4 (API Gateway IAM auth)")
    // No .env(AWS_REGION): an execute-api URL's own region must decide over it (signing-region.ts).
    .option(
      "--region <region>",
      "AWS region for --sigv4 (default: the execute-api URL's, else AWS_REGION, AWS_DEFAULT_REGION, the profile's)",
    )
    .option("--json", "print JSON, for scripts")
    .showSuggestionAfterError();
  checkRequiredOptions(root);

  const context = (command: Command) => {
    const globals = command.optsWithGlobals<Globals>();
    const client = new HourglassClient({
      url: globals.url,
      ...(globals.token && { token: globals.token }),
      ...(globals.sigv4 && { sigv4: globals.region ? { region: globals.region } : true }),
    });
    return { client, out: output(Boolean(globals.json)) };
  };

  root
    .command("schedule")
    .description("schedule an event")
    .addOption(need(new Option("--type <type>", "event type, such as webhook")))
    .option("--in <duration>", "run after this long (90s, 15m, 2h, 3d)", duration)
    .option("--at <time>", "run at this ISO-8601 time", instant)
    .addOption(need(new Option("--payload <json|@file>", PAYLOAD_HELP).argParser(payload), PAYLOAD_HELP))
    .option("--id <id>", "your idempotency key")
    .option("--max-attempts <n>", "attempts before the dead letters", count)
    .action(async (options, command: Command) => {
      const { client, out } = context(command);
      const event = await client.schedule({
        type: options.type,
        payload: options.payload,
        ...when(options),
        ...(options.id && { id: options.id }),
        ...(options.maxAttempts && { maxAttempts: options.maxAttempts }),
      });
      out.print(
        event,
        () =>
          `scheduled ${event.id} (${event.type}) for ${event.runAt}${event.overdue ? " — already due, runs now" : ""}`,
      );
    });

  root
    .command("get <id>")
    .description("show one event")
    .action(async (id: string, _options, command: Command) => {
      const { client, out } = context(command);
      const event = await client.get(id);
      out.print(event, () => eventDetails(event));
    });

  root
    .command("cancel <id>")
    .description("cancel an event that has not started")
    .action(async (id: string, _options, command: Command) => {
      const { client, out } = context(command);
      await once(out, {
        subject: `event ${id}`,
        verb: "cancel",
        // Expired: it never runs either, which is all a cancel asks.
        satisfied: ["cancelled", "expired"],
        // The API answers a second cancel with 200, as the first: only the state before tells them apart.
        before: async () => (await client.get(id)).status,
        act: () => client.cancel(id),
        current: () => client.get(id),
        done: (event) => `cancelled ${event.id}`,
      });
    });

  root
    .command("reschedule <id>")
    .description("move an event that has not started")
    .option("--in <duration>", "run after this long", duration)
    .option("--at <time>", "run at this ISO-8601 time", instant)
    .action(async (id: string, options, command: Command) => {
      const { client, out } = context(command);
      const event = await client.reschedule(id, when(options));
      out.print(event, () => `rescheduled ${event.id} for ${event.runAt}`);
    });

  root
    .command("ls")
    .description("list events, newest first")
    .option("--status <status>", "scheduled, dispatched, running, succeeded, retrying, dead or cancelled")
    .option("--type <type>", "only this type")
    .option("--schedule-id <id>", "only this recurring schedule's occurrences")
    .option("--limit <n>", "how many at most", count, 25)
    .action(async (options, command: Command) => {
      const { client, out } = context(command);
      const events: EventBody[] = [];
      for await (const event of client.listAll({
        status: options.status,
        type: options.type,
        scheduleId: options.scheduleId,
        limit: Math.min(100, options.limit),
      })) {
        events.push(event);
        if (events.length >= options.limit) break;
      }
      out.print(events, () => eventTable(events));
    });

  root
    .command("stats")
    .description("counts by status and type, overdue lag, index size")
    .action(async (_options, command: Command) => {
      const { client, out } = context(command);
      const stats = await client.stats();
      out.print(stats, () => statsReport(stats));
    });

  const dlq = root.command("dlq").description("dead letters");
  dlq
    .command("ls")
    .description("list dead letters")
    .option("--limit <n>", "how many at most", count, 25)
    .action(async (options, command: Command) => {
      const { client, out } = context(command);
      const events: EventBody[] = [];
      for await (const event of client.deadLettersAll({ limit: Math.min(100, options.limit) })) {
        events.push(event);
        if (events.length >= options.limit) break;
      }
      out.print(events, () => eventTable(events, "no dead letters"));
    });
  dlq
    .command("replay <id>")
    .description("run a dead letter again, now")
    .action(async (id: string, _options, command: Command) => {
      const { client, out } = context(command);
      await once(out, {
        subject: `event ${id}`,
        verb: "replay",
        // No longer dead: it was replayed (final is final, so nothing else revives it) and runs, or ran.
        satisfied: ["scheduled", "dispatched", "running", "retrying", "succeeded"],
        act: () => client.replay(id),
        current: () => client.get(id),
        done: (event) => `replayed ${event.id}: ${event.status} for ${event.runAt}`,
      });
    });

  root
    .command("import <file>")
    .description("import events from NDJSON (one ScheduleEvent per line); safe to run again")
    .option("--batch <n>", "events per request (1 to 500)", count, 500)
    .option("--progress", "show a progress bar (default: when stderr is a terminal)")
    .option("--no-progress", "never show a progress bar")
    .action(async (file: string, options, command: Command) => {
      const { client, out } = context(command);
      const summary = await importEvents(client, file, {
        batch: Math.max(1, Math.min(500, options.batch)),
        progress: options.progress ?? (!out.json && process.stderr.isTTY === true),
      });
      out.print(summary, () =>
        [
          `created ${summary.created}, already there ${summary.existing}, failed ${summary.failed.length}`,
          ...summary.failed.slice(0, 20).map((f) => `  line ${f.line}: ${f.status} ${f.detail}`),
        ].join("\n"),
      );
      if (summary.failed.length > 0) process.exitCode = 1;
    });

  addLedgerCommands(root, context);
  addDashboardCommand(root);
  addScheduleCommands(root, context);
  addOpsCommands(root, context);
  addLimitsCommands(root, context);
  usageAfterErrors(root);
  return root;
}

/**
 * A flag used wrongly prints its one error and that command's usage line, not the whole help
 * (which buries the error): commander prints the string given here after its error.
 */
function usageAfterErrors(command: Command, path = ""): void {
  const name = path ? `${path} ${command.name()}` : command.name();
  command.showHelpAfterError(`usage: ${name} ${command.usage()}\n(${name} --help for more)`);
  for (const sub of command.commands) usageAfterErrors(sub, name);
}

/**
 * Why a request got no answer at all, when it did not: undici's `fetch failed` (connection refused,
 * unknown host, …, the code on its cause) or ky's timeout. Undefined for every other error.
 */
function noAnswer(error: unknown): string | undefined {
  if (error instanceof TimeoutError) return "no answer in time";
  if (!(error instanceof TypeError) || error.message !== "fetch failed") return undefined;
  const cause = error.cause as (NodeJS.ErrnoException & { errors?: NodeJS.ErrnoException[] }) | undefined;
  // "localhost" fails for IPv4 and IPv6 both: an AggregateError of the two, each with its code.
  return cause?.code ?? cause?.errors?.[0]?.code ?? cause?.message ?? "fetch failed";
}

/**
 * Runs the CLI. Every failure a user can cause or meet is one short message on stderr (or the
 * problem as JSON with --json), never a stack: exit 1 for what the server or network said (and,
 * as commander does, for flags used wrongly), 2 for a value an action refuses.
 */
export async function main(argv: string[]): Promise<void> {
  const cli = program();
  try {
    await cli.parseAsync(argv);
  } catch (error) {
    if (error instanceof HourglassApiError) {
      if (argv.includes("--json")) process.stdout.write(`${JSON.stringify(error.problem, null, 2)}\n`);
      else process.stderr.write(apiErrorText(error));
      process.exitCode = 1;
      return;
    }
    const why = noAnswer(error);
    if (why) {
      process.stderr.write(
        `hourglass: nothing answers at ${cli.opts<Globals>().url} (${why}). Start Hourglass with ` +
          "`npm start` in the project folder, or point --url (or HOURGLASS_URL) at a running one.\n",
      );
      process.exitCode = 1;
      return;
    }
    if (error instanceof StateConflictError) {
      if (argv.includes("--json"))
        process.stdout.write(`${JSON.stringify({ error: error.message, state: error.state }, null, 2)}\n`);
      else process.stderr.write(`hourglass: ${error.message}\n`);
      process.exitCode = 1;
      return;
    }
    if (error instanceof InvalidArgumentError || error instanceof SigningRegionError) {
      process.stderr.write(`hourglass: ${error.message}\n`);
      process.exitCode = 2;
      return;
    }
    if (awsError(error)) {
      // What AWS said (no credentials, access denied, …), as `status --aws` says it: one line.
      process.stderr.write(`hourglass: ${error.message}\n`);
      process.exitCode = 1;
      return;
    }
    throw error;
  }
}

/** An error from the AWS SDK (an answer from AWS, or the credential chain finding nothing). */
function awsError(error: unknown): error is Error {
  return error instanceof Error && ("$metadata" in error || error.name === "CredentialsProviderError");
}

/** The problem's title, then each field error once; the detail only when there are none. */
function apiErrorText(error: HourglassApiError): string {
  const issues = error.problem.errors ?? [];
  if (issues.length === 0) return `hourglass: ${error.message}\n`;
  return `hourglass: ${error.status} ${error.problem.title}\n${issues
    .map((e) => `  ${e.path || "(body)"}: ${e.message}\n`)
    .join("")}`;
}
