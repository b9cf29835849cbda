import {
  GetScheduleCommand,
  type GetScheduleCommandOutput,
  ListSchedulesCommand,
  type SchedulerClient,
  UpdateScheduleCommand,
  type UpdateScheduleCommandInput,
} from "@aws-sdk/client-scheduler";
import { SingleBar } from "cli-progress";
import { HourglassApiError, type HourglassClient } from "../client/client.ts";
import { hourglassOwnSchedule, type MappingOptions, mapSchedule } from "../schedules/eventbridge.ts";

export interface ImportOptions extends MappingOptions {
  readonly group?: string | undefined;
  readonly prefix?: string | undefined;
  /** Map and report, create nothing, disable nothing. */
  readonly dryRun: boolean;
  /** Disable each source schedule once its Hourglass twin exists. */
  readonly disableSource: boolean;
  readonly progress: boolean;
}

export interface ImportRow {
  readonly source: string;
  readonly id?: string | undefined;
  /** `skipped`: a schedule of an Hourglass deployment itself (its dispatcher's), never imported. */
  readonly mapping: "mapped" | "changed" | "refused" | "skipped";
  /** What happened in Hourglass. */
  readonly result: "created" | "existing" | "would create" | "refused" | "conflict" | "failed" | "skipped";
  readonly disabled: boolean;
  readonly notes: string[];
}

/**
 * Copies EventBridge Scheduler schedules into Hourglass: ListSchedules, GetSchedule for each, map
 * (see `schedules/eventbridge.ts`), create. Ids are derived from the source's group and name and
 * the body from the source, so running it again creates nothing twice.
 */
export async function importFromEventBridge(
  scheduler: Pick<SchedulerClient, "send">,
  client: Pick<HourglassClient, "createSchedule">,
  options: ImportOptions,
): Promise<ImportRow[]> {
  const summaries = [];
  let token: string | undefined;
  do {
    const page = await scheduler.send(
      new ListSchedulesCommand({
        ...(options.group && { GroupName: options.group }),
        ...(options.prefix && { NamePrefix: options.prefix }),
        NextToken: token,
      }),
    );
    summaries.push(...(page.Schedules ?? []));
    token = page.NextToken;
  } while (token);

  const bar = options.progress
    ? new SingleBar({
        format: "importing [{bar}] {value}/{total} schedules",
        stream: process.stderr,
        noTTYOutput: true,
      })
    : undefined;
  bar?.start(summaries.length, 0);
  const started = Date.now();
  const rows: ImportRow[] = [];
  for (const summary of summaries) {
    const source = await scheduler.send(
      new GetScheduleCommand({ Name: summary.Name!, GroupName: summary.GroupName ?? "default" }),
    );
    rows.push(await importOne(scheduler, client, source, options, started));
    bar?.increment();
  }
  bar?.stop();
  return rows;
}

async function importOne(
  scheduler: Pick<SchedulerClient, "send">,
  client: Pick<HourglassClient, "createSchedule">,
  source: GetScheduleCommandOutput,
  options: ImportOptions,
  started: number,
): Promise<ImportRow> {
  const name = `${source.GroupName ?? "default"}/${source.Name}`;
  const own = hourglassOwnSchedule(source);
  if (own) return { source: name, mapping: "skipped", result: "skipped", disabled: false, notes: [own] };
  const mapping = mapSchedule(source, options);
  if (mapping.outcome === "refused") {
    return { source: name, mapping: "refused", result: "refused", disabled: false, notes: mapping.notes };
  }
  const row = { source: name, id: mapping.input.id, mapping: mapping.outcome, notes: mapping.notes };
  if (options.dryRun) return { ...row, result: "would create", disabled: false };
  let result: ImportRow["result"];
  try {
    const created = await client.createSchedule(mapping.input);
    result = Date.parse(created.createdAt) >= started - 1_000 ? "created" : "existing";
  } catch (error) {
    if (!(error instanceof HourglassApiError)) throw error;
    const detail = error.problem.detail ?? error.message;
    if (error.status === 409)
      return { ...row, result: "conflict", disabled: false, notes: [...row.notes, detail] };
    if (error.status === 422)
      return { ...row, result: "refused", disabled: false, notes: [...row.notes, detail] };
    return { ...row, result: "failed", disabled: false, notes: [...row.notes, detail] };
  }
  let disabled = false;
  if (options.disableSource && source.State !== "DISABLED") {
    await scheduler.send(new UpdateScheduleCommand(disabledCopy(source)));
    disabled = true;
  }
  return { ...row, result, disabled };
}

/**
 * UpdateSchedule replaces the whole schedule: a field left out is reset, not kept. So the update
 * carries every field GetSchedule returned, with only the state changed.
 */
export function disabledCopy(source: GetScheduleCommandOutput): UpdateScheduleCommandInput {
  return {
    Name: source.Name!,
    GroupName: source.GroupName,
    ScheduleExpression: source.ScheduleExpression!,
    ScheduleExpressionTimezone: source.ScheduleExpressionTimezone,
    StartDate: source.StartDate,
    EndDate: source.EndDate,
    Description: source.Description,
    State: "DISABLED",
    KmsKeyArn: source.KmsKeyArn,
    Target: source.Target!,
    FlexibleTimeWindow: source.FlexibleTimeWindow!,
    ActionAfterCompletion: source.ActionAfterCompletion,
  };
}
