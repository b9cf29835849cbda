import { App } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { esbuildTarget, functionBundling, RUNTIME } from "../../infra/construct/bundling.ts";
import { HourglassStack, type HourglassStackProps } from "../../infra/stacks/hourglass-stack.ts";

// What a deployment leaves in the account beyond its own resources, and what its bundles are built
// for. Bundling is skipped (test/infra/synth.test.ts builds real bundles); these read the template.
const synth = (props: HourglassStackProps = {}) => {
  const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
  const stack = new HourglassStack(app, "Test", {
    env: { account: "111111111111", region: "eu-west-1" },
    ...props,
  });
  return Template.fromStack(stack);
};

type Resource = { Type: string; Properties: Record<string, unknown>; DeletionPolicy?: string };
const resources = (template: Template) => template.toJSON().Resources as Record<string, Resource>;
const hourglassFunctions = (template: Template) =>
  Object.entries(template.findResources("AWS::Lambda::Function")).filter(
    ([, fn]) => fn.Properties.Environment?.Variables?.HOURGLASS_MODE === "aws",
  );

describe("bundles and runtime", () => {
  const template = synth();

  it("builds the bundles for the Node the functions run on", () => {
    const runtimes = new Set(hourglassFunctions(template).map(([, fn]) => fn.Properties.Runtime));
    expect([...runtimes]).toEqual([RUNTIME.name]);
    const major = /^nodejs(\d+)\.x$/.exec(RUNTIME.name)![1];
    expect(functionBundling("/repo/functions/handlers.ts").target).toBe(`node${major}`);
    expect(esbuildTarget(RUNTIME)).toBe(`node${major}`);
  });

  it("keeps source maps off at cold start unless the user turns them on, and maps without sources", () => {
    const bundling = functionBundling("/repo/functions/handlers.ts");
    expect(bundling.sourceMap).toBe(true);
    expect(bundling.sourcesContent).toBe(false);
    for (const [id, fn] of hourglassFunctions(template))
      expect(fn.Properties.Environment.Variables.NODE_OPTIONS, id).toBeUndefined();
    const traced = synth({
      hourglass: {
        overrides: { workerFunction: { environment: { NODE_OPTIONS: "--enable-source-maps" } } },
      },
    });
    const options = Object.fromEntries(
      hourglassFunctions(traced).map(([id, fn]) => [
        id.replace(/Function.*$/, ""),
        fn.Properties.Environment.Variables.NODE_OPTIONS,
      ]),
    );
    expect(options).toEqual({
      HourglassApi: undefined,
      HourglassDispatcher: undefined,
      HourglassWorker: "--enable-source-maps",
    });
  });
});

describe("what the stack leaves behind", () => {
  it("deletes its log groups with a throwaway stack and keeps them in production", () => {
    const logGroups = (template: Template) =>
      Object.entries(resources(template)).filter(([, r]) => r.Type === "AWS::Logs::LogGroup");
    const throwaway = logGroups(synth({ hourglass: { production: false } }));
    // The three functions', the API's access logs and the VPC's flow logs.
    expect(throwaway.length).toBeGreaterThanOrEqual(5);
    for (const [id, group] of throwaway) expect(group.DeletionPolicy, id).toBe("Delete");
    for (const [id, group] of logGroups(synth())) expect(group.DeletionPolicy, id).toBe("Retain");
    const lean = logGroups(synth({ hourglass: { production: false, profile: "lean" } }));
    for (const [id, group] of lean) expect(group.DeletionPolicy, id).toBe("Delete");
  });

  it("sets API Gateway's account-wide CloudWatch role so a fresh account deploys, keeps it on delete, and leaves it alone when told", () => {
    const apiGatewayRole = (template: Template) =>
      Object.entries(template.findResources("AWS::IAM::Role")).find(([, r]) =>
        JSON.stringify(r.Properties.AssumeRolePolicyDocument).includes("apigateway.amazonaws.com"),
      );
    const byDefault = synth();
    byDefault.resourceCountIs("AWS::ApiGateway::Account", 1);
    const account = Object.values(byDefault.findResources("AWS::ApiGateway::Account"))[0]!;
    const role = apiGatewayRole(byDefault)!;
    expect(account.Properties.CloudWatchRoleArn).toEqual({ "Fn::GetAtt": [role[0], "Arn"] });
    // Deleting the stack must not stop the logs of every other REST API in the account.
    expect(role[1].DeletionPolicy).toBe("Retain");
    expect(account.DeletionPolicy).toBe("Retain");

    const leftAlone = synth({ hourglass: { apiGatewayCloudWatchRole: false } });
    leftAlone.resourceCountIs("AWS::ApiGateway::Account", 0);
    expect(apiGatewayRole(leftAlone)).toBeUndefined();
    // Access logs are still written, through whatever role the account has.
    leftAlone.hasResourceProperties("AWS::ApiGateway::Stage", {
      AccessLogSetting: Match.objectLike({ DestinationArn: Match.anyValue() }),
    });
    // The lean profile's HTTP API needs no account role.
    synth({ hourglass: { profile: "lean" } }).resourceCountIs("AWS::ApiGateway::Account", 0);
  });

  it("limits each API key on its own, below the stage's shared limit, and takes a key per tenant", () => {
    const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
    const stack = new HourglassStack(app, "Keys", {
      env: { account: "111111111111", region: "eu-west-1" },
      hourglass: { apiKeys: true },
    });
    const { api, usagePlan } = stack.hourglass;
    usagePlan!.addApiKey(api!.addApiKey("TenantA"));
    usagePlan!.addApiKey(api!.addApiKey("TenantB"));
    const template = Template.fromStack(stack);
    const plan = Object.values(template.findResources("AWS::ApiGateway::UsagePlan"));
    expect(plan).toHaveLength(1);
    expect(plan[0]!.Properties.Throttle).toEqual({ RateLimit: 100, BurstLimit: 200 });
    template.hasResourceProperties("AWS::ApiGateway::Stage", {
      MethodSettings: Match.arrayWith([
        Match.objectLike({ ThrottlingRateLimit: 1000, ThrottlingBurstLimit: 2000 }),
      ]),
    });
    template.resourceCountIs("AWS::ApiGateway::ApiKey", 3);
    template.resourceCountIs("AWS::ApiGateway::UsagePlanKey", 3);
    expect(() =>
      synth({ hourglass: { apiKeys: true, apiKeyThrottle: { rateLimit: 5_000, burstLimit: 5_000 } } }),
    ).toThrow(/at most throttle/);
    expect(() => synth({ hourglass: { apiKeyThrottle: { rateLimit: 10, burstLimit: 20 } } })).toThrow(
      /set apiKeys/,
    );
  });

  it("refuses the CloudWatch role with the lean profile, whose HTTP API needs none", () => {
    expect(() => synth({ hourglass: { profile: "lean", apiGatewayCloudWatchRole: true } })).toThrow(
      /apiGatewayCloudWatchRole/,
    );
  });
});
