import { AwsFault } from "../errors.ts";
import { jsonReply } from "../protocols.ts";
import type { ScheduleStore } from "../schedule-store.ts";
import type { LocalService } from "../service-call.ts";

/** Fields of an UpdateSchedule request that name the call, not the schedule. */
const NOT_STORED = new Set(["Name", "GroupName", "ClientToken"]);

/** GetSchedule and UpdateSchedule over the harness's schedule store, in Scheduler's REST shapes. */
export function scheduler(store: ScheduleStore, region: string, accountId: string): LocalService {
  const arn = (group: string, name: string) =>
    `arn:aws:scheduler:${region}:${accountId}:schedule/${group}/${name}`;
  const notFound = (name: string) =>
    new AwsFault(404, "ResourceNotFoundException", `Schedule ${name} does not exist.`, {
      messageKey: "Message",
    });
  const names = (input: Readonly<Record<string, unknown>>) => ({
    name: String(input.Name ?? ""),
    group: typeof input.GroupName === "string" && input.GroupName ? input.GroupName : "default",
  });

  return {
    GetSchedule: (call) => {
      const { name, group } = names(call.input);
      const schedule = store.get(group, name);
      if (!schedule) throw notFound(name);
      return jsonReply(call.protocol, {
        ...schedule.fields,
        Arn: arn(group, name),
        Name: name,
        GroupName: group,
        CreationDate: schedule.creationDate,
        LastModificationDate: schedule.lastModificationDate,
      });
    },
    UpdateSchedule: (call) => {
      const { name, group } = names(call.input);
      const target = call.input.Target as Record<string, unknown> | undefined;
      const missing = !call.input.ScheduleExpression
        ? "scheduleExpression"
        : !call.input.FlexibleTimeWindow
          ? "flexibleTimeWindow"
          : !target?.Arn || !target.RoleArn
            ? "target"
            : undefined;
      if (missing) {
        throw new AwsFault(
          400,
          "ValidationException",
          `1 validation error detected: Value null at '${missing}' failed to satisfy constraint: Member must not be null`,
          {
            messageKey: "Message",
          },
        );
      }
      const fields = Object.fromEntries(
        Object.entries(call.input).filter(([field]) => !NOT_STORED.has(field)),
      );
      if (!store.update(group, name, fields)) throw notFound(name);
      return jsonReply(call.protocol, { ScheduleArn: arn(group, name) });
    },
  };
}
