import { App, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks } from "cdk-nag";
import type { Transition } from "../shared/notifications/model.ts";
import type { Egress, HourglassProps, Profile } from "./construct/hourglass.ts";
import { EGRESS_CHOICES } from "./construct/props.ts";
import { HourglassStack } from "./stacks/hourglass-stack.ts";

/**
 * `cdk deploy` entry point. Context (`-c name=value`, see docs/deploy.md): `production=false` for
 * a throwaway environment, `egress=nat-gateway-per-az|nat-gateway|nat-instance|none`, `profile=lean`,
 * `cache=serverless`, `apiKeys=true`, `apiGatewayCloudWatchRole=false` (leave the account's API
 * Gateway logging role as it is), `webhookAllowPrivate=true`, `redisUrl=...`,
 * `dispatcherReservedConcurrency=1|none`, `notifications=dead,retrying` (the transitions put on an
 * EventBridge bus; none by default), `admins=ARN[,ARN…]` (roles that may call the admin routes
 * and run `hourglass status|pause|resume --aws`), and
 * `localstack=true` (an EventBridge rule drives the dispatcher: LocalStack's Scheduler never fires).
 */
const app = new App();
const flag = (name: string, fallback: boolean) => {
  const value = app.node.tryGetContext(name);
  return value === undefined ? fallback : value === true || value === "true";
};
const choice = <T extends string>(name: string, allowed: readonly T[]): T | undefined => {
  const value = app.node.tryGetContext(name);
  if (value === undefined) return undefined;
  if (!allowed.includes(value))
    throw new Error(`-c ${name} must be one of ${allowed.join(", ")} (got ${value})`);
  return value as T;
};
// `1` or `none`; the construct's validation names anything else.
const reservation = app.node.tryGetContext("dispatcherReservedConcurrency");
const redisUrl = app.node.tryGetContext("redisUrl");
const cache = choice("cache", ["replication-group", "serverless"] as const);
const egress = choice<Egress>("egress", EGRESS_CHOICES);
const profile = choice<Profile>("profile", ["standard", "lean"]);
const cloudWatchRole = app.node.tryGetContext("apiGatewayCloudWatchRole");
// `-c notifications=dead,retrying`: the transitions put on an EventBridge bus (none by default).
const transitions = String(app.node.tryGetContext("notifications") ?? "")
  .split(",")
  .map((name) => name.trim())
  .filter(Boolean) as Transition[];
const hourglass: HourglassProps = {
  production: flag("production", true),
  apiKeys: flag("apiKeys", false),
  webhookAllowPrivate: flag("webhookAllowPrivate", false),
  dispatchTrigger: flag("localstack", false) ? "events-rule" : "scheduler",
  ...(egress && { egress }),
  ...(reservation !== undefined && {
    dispatcherReservedConcurrency: reservation === "none" ? "none" : Number(reservation),
  }),
  ...(profile && { profile }),
  ...(transitions.length > 0 && { notifications: { transitions } }),
  ...(cloudWatchRole !== undefined && { apiGatewayCloudWatchRole: flag("apiGatewayCloudWatchRole", true) }),
  ...(redisUrl
    ? { redis: { kind: "external", url: String(redisUrl) } }
    : cache
      ? { redis: { kind: cache } }
      : {}),
};
const admins = String(app.node.tryGetContext("admins") ?? "")
  .split(",")
  .map((arn) => arn.trim())
  .filter(Boolean);
new HourglassStack(app, app.node.tryGetContext("stackName") ?? "Hourglass", {
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  description: "Hourglass: scheduled work for AWS",
  hourglass,
  adminRoleArns: admins,
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
app.synth();
