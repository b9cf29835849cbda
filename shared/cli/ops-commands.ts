import type { Command } from "commander";
import { AdminRouteError, adminRoute, adminRows, pauseReport } from "./admin-route.ts";
// Types only: the AWS SDK clients behind --aws load when --aws is given, so every other command
// starts without them (a third of a second of imports).
import type { AwsStatus, QueueDepth } from "./aws-deployment.ts";
import { type Output, table } from "./output.ts";

function statusTable(s: AwsStatus): string {
  const rows = table();
  const q = (d: QueueDepth) => `${d.visible} waiting, ${d.inFlight} in flight, ${d.delayed} delayed`;
  rows.push(
    { stack: s.stack },
    { dispatcher: `${s.dispatcher.state} (${s.dispatcher.expression}) ${s.dispatcher.schedule}` },
    { "last change": s.dispatcher.lastModified ?? "unknown" },
    ...adminRows(s.admin),
    { "work queue": q(s.queue) },
    { "dead letters": q(s.deadLetterQueue) },
    { "alarms in ALARM": s.alarmsInAlarm.length === 0 ? "none" : s.alarmsInAlarm.join("\n") },
    { "oldest overdue (metric)": s.oldestOverdueMs === null ? "no data" : `${s.oldestOverdueMs} ms` },
  );
  return rows.toString();
}

interface OpsGlobals {
  url: string;
  token?: string;
  region?: string;
  json?: boolean;
}

type Context = (command: Command) => { out: Output };

/** One line on stderr and exit code 1 for what an operator can act on; anything else is a bug. */
const reported =
  <A extends unknown[]>(action: (...args: A) => Promise<void>) =>
  async (...args: A): Promise<void> => {
    try {
      await action(...args);
    } catch (error) {
      const { OpsError } = await import("./aws-deployment.ts");
      const known =
        error instanceof OpsError ||
        error instanceof AdminRouteError ||
        (error instanceof Error && "$metadata" in error) ||
        (error instanceof Error && error.name === "CredentialsProviderError");
      if (!known) throw error;
      process.stderr.write(`hourglass: ${error.message}\n`);
      process.exitCode = 1;
    }
  };

/** The local admin routes with the admin token (`--token` or HOURGLASS_TOKEN); no retries, as before. */
const local = (globals: OpsGlobals) => adminRoute(globals.url, { token: globals.token, retries: 0 });

/**
 * `hourglass status|pause|resume`: locally through the admin routes; with `--aws`, on a deployed
 * stack through its admin routes (SigV4), EventBridge Scheduler, SQS, CloudWatch and the stack's
 * outputs.
 */
export function addOpsCommands(root: Command, context: Context): void {
  const withAws = (command: Command) =>
    command
      .option("--aws", "act on a deployed stack (AWS credentials from the usual chain)")
      .option("--stack <name>", "the stack's name, with --aws", "Hourglass");

  withAws(
    root.command("status").description("is it dispatching? (paused or not, index, queues, alarms)"),
  ).action(
    reported(async (options: { aws?: boolean; stack: string }, command: Command) => {
      const { out } = context(command);
      const globals = command.optsWithGlobals<OpsGlobals>();
      if (options.aws) {
        const { awsStatus, opsClients } = await import("./aws-deployment.ts");
        const status = await awsStatus(opsClients(globals.region), options.stack);
        out.print(status, () => statusTable(status));
        return;
      }
      const status = await local(globals).status();
      out.print(
        status,
        () =>
          `dispatch: ${status.paused ? "PAUSED" : "running"}    index size: ${status.indexSize}    oldest overdue: ${status.oldestOverdueMs} ms`,
      );
    }),
  );

  for (const [name, paused] of [
    ["pause", true],
    ["resume", false],
  ] as const) {
    withAws(
      root
        .command(name)
        .description(
          paused
            ? "stop dispatching (events are still accepted; nothing is claimed)"
            : "dispatch again (overdue events run in due order, never early)",
        ),
    ).action(
      reported(async (options: { aws?: boolean; stack: string }, command: Command) => {
        const { out } = context(command);
        const globals = command.optsWithGlobals<OpsGlobals>();
        if (options.aws) {
          const { opsClients, setDeploymentPaused } = await import("./aws-deployment.ts");
          const result = await setDeploymentPaused(opsClients(globals.region), options.stack, paused);
          if (result.complete || out.json) out.print(result, () => pauseReport(result));
          else process.stderr.write(`hourglass: ${pauseReport(result)}\n`);
          // Half a pause is not a pause: a script must not carry on as if it were.
          if (!result.complete) process.exitCode = 1;
          return;
        }
        const status = await local(globals).setPaused(paused);
        out.print(status, () => (paused ? "dispatch paused" : "dispatch resumed"));
      }),
    );
  }
}
