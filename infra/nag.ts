import { Stack, Validations } from "aws-cdk-lib";
import type { Hourglass } from "./construct/hourglass.ts";

const IAM4 = (policy: string) =>
  `AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/${policy}]`;

/**
 * cdk-nag (AwsSolutions) findings Hourglass accepts, each with its reason, scoped as narrowly as
 * the finding allows. Any other finding fails `cdk synth`.
 */
export function acknowledgeFindings(hourglass: Hourglass): void {
  for (const fn of [hourglass.apiFunction, hourglass.dispatcherFunction, hourglass.workerFunction]) {
    Validations.of(fn).acknowledge(
      {
        id: IAM4("AWSLambdaBasicExecutionRole"),
        reason: "The AWS-maintained minimum for writing the function's own logs.",
      },
      {
        id: IAM4("AWSLambdaVPCAccessExecutionRole"),
        reason:
          "The AWS-maintained minimum for the ENIs a function in a VPC needs (it reaches Valkey there).",
      },
      {
        id: "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
        reason: "X-Ray tracing: xray:PutTraceSegments and PutTelemetryRecords take no resource ARN.",
      },
      {
        id: `AwsSolutions::AwsSolutions-IAM5[Resource::<${Stack.of(hourglass).getLogicalId(hourglass.eventsTable.node.defaultChild as never)}.Arn>/index/*]`,
        reason:
          "Queries on the events table's own indexes (pending, byTenant, dead): dynamodb:Query only, see TABLE_ACCESS in compute.ts.",
      },
      {
        id: `AwsSolutions::AwsSolutions-IAM5[Resource::<${Stack.of(hourglass).getLogicalId(hourglass.schedulesTable.node.defaultChild as never)}.Arn>/index/*]`,
        reason: "Queries on the schedules table's own due index, granted by TableV2.grantReadWriteData.",
      },
    );
  }
  for (const fn of Object.values(hourglass.handlerFunctions)) {
    const resource = fn.node.defaultChild;
    if (!resource || Stack.of(fn) !== Stack.of(hourglass)) continue;
    Validations.of(hourglass.workerFunction).acknowledge({
      id: `AwsSolutions::AwsSolutions-IAM5[Resource::<${Stack.of(fn).getLogicalId(resource as never)}.Arn>:*]`,
      reason:
        "grantInvoke covers every version and alias of the user's handler function, and only that function.",
    });
  }
  if (hourglass.api) {
    Validations.of(hourglass.api).acknowledge(
      {
        id: IAM4("AmazonAPIGatewayPushToCloudWatchLogs"),
        reason: "API Gateway's account-level role for execution logs; AWS maintains the policy.",
      },
      {
        id: "AwsSolutions::AwsSolutions-APIG2",
        reason:
          "Requests are validated in the API function (zod schemas, RFC 9457 problems naming each field), not by API Gateway models.",
      },
      {
        id: "AwsSolutions::AwsSolutions-APIG3",
        reason:
          "WAF is an account-level choice with its own cost; IAM authorization and stage throttling protect the API by default.",
      },
      {
        id: "AwsSolutions::AwsSolutions-COG4",
        reason: "The API uses IAM authorization (SigV4) for service callers, not Cognito user pools.",
      },
    );
  }
  if (hourglass.cache) {
    Validations.of(hourglass.cache.authSecret).acknowledge({
      id: "AwsSolutions::AwsSolutions-SMG4",
      reason:
        "Not rotated automatically: a Valkey AUTH token changes through ElastiCache's two-token rotation (ROTATE, then SET), and a serverless user's password through ModifyUser; docs/security.md gives the steps. Redeploying does not regenerate it.",
    });
  }
  Validations.of(hourglass.webhookSecret).acknowledge({
    id: "AwsSolutions::AwsSolutions-SMG4",
    reason:
      "Not rotated automatically, by design: every tenant's signing secret is derived from this master, so changing it would break every receiver at once. Tenants rotate their own secrets with POST /v1/webhook-secret/rotate, with an overlap.",
  });
  for (const admin of hourglass.admins) {
    if (Stack.of(admin) !== Stack.of(hourglass) || !admin.node.defaultChild) continue;
    Validations.of(admin).acknowledge({
      id: "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
      reason:
        "Hourglass admins read alarms by name and the overdue metric: cloudwatch:GetMetricData takes no resource, DescribeAlarms is read-only.",
    });
  }
  Validations.of(hourglass.node.findChild("ScheduleDlq")).acknowledge({
    id: "AwsSolutions::AwsSolutions-SQS3",
    reason: "This queue is EventBridge Scheduler's dead-letter queue for the dispatcher schedule.",
  });
  for (const instance of hourglass.nat?.gatewayInstances ?? [])
    Validations.of(instance).acknowledge(
      {
        id: "AwsSolutions::AwsSolutions-EC28",
        reason:
          "Detailed monitoring costs more a month than a quarter of the NAT instance; its status checks, which the reboot alarm watches, come every minute without it.",
      },
      {
        id: "AwsSolutions::AwsSolutions-EC29",
        reason:
          "CloudFormation replaces the NAT instance when a deploy resolves a newer Amazon Linux AMI; termination protection would make that replacement fail and leave the old instance running. EC2's automatic recovery and the reboot alarm keep it up (docs/deploy.md).",
      },
    );
  Validations.of(hourglass.vpc).acknowledge({
    id: "AwsSolutions::AwsSolutions-EC23",
    reason:
      "Interface endpoint security groups admit HTTPS from the VPC's own CIDR, which cdk-nag cannot resolve at synth time.",
  });
  Validations.of(Stack.of(hourglass)).acknowledge({
    id: `AwsSolutions::AwsSolutions-IAM5[Resource::<${Stack.of(hourglass).getLogicalId(hourglass.dispatcherFunction.node.defaultChild as never)}.Arn>:*]`,
    reason:
      "EventBridge Scheduler's role may invoke any version of the dispatcher function, and only that function.",
  });
}
