import { CfnOutput, Fn, Stack, type StackProps } from "aws-cdk-lib";
import type { Construct } from "constructs";
import { Hourglass, type HourglassProps } from "../construct/hourglass.ts";
import { acknowledgeFindings } from "../nag.ts";

export interface HourglassStackProps extends StackProps {
  readonly hourglass?: HourglassProps;
}

/** The deployable stack: the Hourglass construct and the outputs a user needs to call it. */
export class HourglassStack extends Stack {
  public readonly hourglass: Hourglass;

  constructor(scope: Construct, id: string, props: HourglassStackProps = {}) {
    super(scope, id, props);
    this.hourglass = new Hourglass(this, "Hourglass", props.hourglass);
    acknowledgeFindings(this.hourglass);
    new CfnOutput(this, "ApiUrl", {
      value: this.hourglass.apiUrl,
      description: "HOURGLASS_URL for the CLI and client",
    });
    new CfnOutput(this, "EventsTable", { value: this.hourglass.eventsTable.tableName });
    new CfnOutput(this, "WorkQueueUrl", { value: this.hourglass.queue.queueUrl });
    new CfnOutput(this, "Dashboard", { value: this.hourglass.dashboard.dashboardName });
    // Read by `hourglass status|pause|resume --aws --stack NAME` (shared/cli/ops-commands.ts).
    if (this.hourglass.schedule) {
      new CfnOutput(this, "DispatchSchedule", { value: this.hourglass.schedule.scheduleName });
      new CfnOutput(this, "DispatchScheduleGroup", {
        value: this.hourglass.schedule.scheduleGroup?.scheduleGroupName ?? "default",
      });
    }
    new CfnOutput(this, "DeadLetterQueueUrl", { value: this.hourglass.deadLetterQueue.queueUrl });
    new CfnOutput(this, "AlarmNames", {
      value: Fn.join(
        ",",
        Object.values(this.hourglass.alarms).map((alarm) => alarm.alarmName),
      ),
    });
  }
}
