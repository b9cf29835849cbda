import { RemovalPolicy } from "aws-cdk-lib";
import * as logs from "aws-cdk-lib/aws-logs";
import type { Construct } from "constructs";

/** How long Hourglass's log groups keep their logs, and whether they outlive the stack. */
export interface LogSettings {
  readonly retention: logs.RetentionDays;
  /** `production`: the logs are kept when the stack goes (evidence after an incident); otherwise not. */
  readonly production: boolean;
}

/**
 * A log group of the deployment (a function's, the API's access logs, the VPC's flow logs). A log
 * group's own default is RETAIN, which leaves every throwaway (`production: false`) stack behind as
 * orphaned groups that a new stack of the same name then collides with; so only production keeps them.
 */
export function createLogGroup(scope: Construct, id: string, settings: LogSettings): logs.LogGroup {
  return new logs.LogGroup(scope, id, {
    retention: settings.retention,
    removalPolicy: settings.production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
  });
}
