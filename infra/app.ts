import { App, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks } from "cdk-nag";
import { HourglassStack } from "./stacks/hourglass-stack.ts";

/**
 * `cdk deploy` entry point. Context: `-c production=false` for a throwaway environment,
 * `-c cache=serverless`, `-c egress=true` for webhooks to the internet, `-c apiKeys=true`.
 */
const app = new App();
const flag = (name: string, fallback: boolean) => {
  const value = app.node.tryGetContext(name);
  return value === undefined ? fallback : value === true || value === "true";
};
new HourglassStack(app, app.node.tryGetContext("stackName") ?? "Hourglass", {
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  description: "Hourglass: scheduled work for AWS",
  hourglass: {
    production: flag("production", true),
    internetEgress: flag("egress", false),
    apiKeys: flag("apiKeys", false),
    ...(app.node.tryGetContext("redisUrl")
      ? { externalRedis: { url: String(app.node.tryGetContext("redisUrl")) } }
      : {
          cache:
            app.node.tryGetContext("cache") === "serverless"
              ? ("serverless" as const)
              : ("replication-group" as const),
        }),
  },
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
app.synth();
