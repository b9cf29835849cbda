import { CfnOutput, Fn, Stack, type StackProps } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import type { Construct } from "constructs";
import { Hourglass, type HourglassProps } from "../construct/hourglass.ts";
import { acknowledgeFindings } from "../nag.ts";

export interface HourglassStackProps extends StackProps {
  readonly hourglass?: HourglassProps;
  /**
   * ARNs of existing roles to name as admins (`-c admins=ARN,ARN`), beside `hourglass.admins`.
   * Imported immutable: the stack never edits a role it does not own, so each needs what
   * `Hourglass.grantOperate` lists from its own policies (docs/deploy.md).
   * @default none
   */
  readonly adminRoleArns?: readonly string[];
}

/** An IAM role ARN, any partition, any path. */
const ROLE_ARN = /^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]+$/;

/** The deployable stack: the Hourglass construct and the outputs a user needs to call it. */
export class HourglassStack extends Stack {
  public readonly hourglass: Hourglass;

  constructor(scope: Construct, id: string, props: HourglassStackProps = {}) {
    super(scope, id, props);
    const arns = props.adminRoleArns ?? [];
    const malformed = arns.filter((arn) => !ROLE_ARN.test(arn));
    if (malformed.length > 0) {
      throw new Error(
        `admins must be IAM role ARNs (arn:aws:iam::123456789012:role/Name): ${malformed.join(", ")}`,
      );
    }
    const imported = arns.map((arn, i) => iam.Role.fromRoleArn(this, `Admin${i}`, arn, { mutable: false }));
    this.hourglass = new Hourglass(this, "Hourglass", {
      ...props.hourglass,
      ...(imported.length > 0 && { admins: [...(props.hourglass?.admins ?? []), ...imported] }),
    });
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
