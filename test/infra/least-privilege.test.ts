import { App, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import { describe, expect, it } from "vitest";
import { Hourglass } from "../../infra/construct/hourglass.ts";
import { HourglassPropsError } from "../../infra/construct/props.ts";
import { HourglassStack, type HourglassStackProps } from "../../infra/stacks/hourglass-stack.ts";

// Bundling is skipped (the `cdk synth` test exercises it); these assertions read the template.
const synth = (props: HourglassStackProps = {}) => {
  const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
  const stack = new HourglassStack(app, "Test", {
    env: { account: "111111111111", region: "eu-west-1" },
    ...props,
  });
  return { stack, template: Template.fromStack(stack) };
};

type Resources = Record<
  string,
  { Type: string; Properties: Record<string, unknown>; DeletionPolicy?: string }
>;

// Which actions each function's role grants is checked against the calls its bundle really makes:
// the AWS-shaped run records every AWS call and decides it with IAM's evaluator against the
// template's policies, and fails on a grant no call used (test/support/aws-shaped-scenario.ts).
// A hand-written list here could not catch a call the code makes that the role does not allow.

describe("least privilege (issue 9)", () => {
  const { template } = synth();

  it("grants DeleteItem to the API alone, on the schedules table alone (ScheduleStore.delete)", () => {
    // The one delete in the code is a TransactWriteItems Delete of a schedule, which IAM authorizes as
    // DeleteItem (grep: shared/schedules/store.ts); the dispatcher only finds and advances schedules.
    const deletes: string[] = [];
    for (const [id, policy] of Object.entries(template.findResources("AWS::IAM::Policy"))) {
      for (const statement of policy.Properties.PolicyDocument.Statement) {
        if (![statement.Action].flat().includes("dynamodb:DeleteItem")) continue;
        for (const resource of [statement.Resource].flat())
          deletes.push(
            `${id.replace(/ServiceRole.*$/, "")} ${JSON.stringify(resource).replace(/[0-9A-F]{8}"/g, '"')}`,
          );
      }
    }
    expect(deletes.sort()).toEqual([
      'HourglassApiFunction {"Fn::GetAtt":["HourglassSchedules","Arn"]}',
      'HourglassApiFunction {"Fn::Join":["",[{"Fn::GetAtt":["HourglassSchedules","Arn"]},"/index/*"]]}',
    ]);
  });

  it("names in each function's HOURGLASS_SECRET_ARNS only the secrets it may read", () => {
    const functions = Object.entries(template.findResources("AWS::Lambda::Function")).filter(
      ([, f]) => f.Properties.Environment?.Variables?.HOURGLASS_MODE === "aws",
    );
    for (const [id, fn] of functions) {
      const secrets = JSON.stringify(fn.Properties.Environment.Variables.HOURGLASS_SECRET_ARNS);
      expect(secrets.includes("WebhookSecret"), id).toBe(!id.includes("Dispatcher"));
    }
  });

  it("gives each function its own security group, with egress limited to what it reaches", () => {
    const resources = template.toJSON().Resources as Resources;
    const groups = new Set<string>();
    for (const [id, resource] of Object.entries(resources)) {
      if (resource.Type !== "AWS::Lambda::Function") continue;
      const vpc = resource.Properties.VpcConfig as { SecurityGroupIds: unknown[] } | undefined;
      if (!vpc) continue;
      expect(vpc.SecurityGroupIds, id).toHaveLength(1);
      groups.add(JSON.stringify(vpc.SecurityGroupIds[0]));
    }
    expect(groups.size).toBe(3);
    for (const [id, resource] of Object.entries(resources)) {
      if (
        resource.Type !== "AWS::EC2::SecurityGroup" ||
        !/Hourglass(Api|Dispatcher|Worker)SecurityGroup/.test(id)
      )
        continue;
      const egress = (resource.Properties.SecurityGroupEgress ?? []) as {
        CidrIp?: string;
        IpProtocol: string;
        FromPort?: number;
      }[];
      // Never "all traffic to anywhere".
      expect(
        egress.some((rule) => rule.IpProtocol === "-1"),
        id,
      ).toBe(false);
      const ports = egress.map((rule) => rule.FromPort);
      if (id.includes("Worker")) expect(ports).toContain(80);
      else expect(ports).not.toContain(80);
    }
  });

  it("retains the webhook signing secret and snapshots the cache in production; the AUTH secret goes with its cache", () => {
    const resources = template.toJSON().Resources as Resources;
    const byId = (pattern: RegExp) => Object.entries(resources).find(([id]) => pattern.test(id))![1];
    expect(byId(/^HourglassWebhookSecret/).DeletionPolicy).toBe("Retain");
    expect(byId(/^HourglassCacheAuth/).DeletionPolicy).toBe("Delete");
    expect(byId(/^HourglassCache[0-9A-F]{8}$/).DeletionPolicy).toBe("Snapshot");
  });

  it("runs serverless Valkey with an ElastiCache user and user group whose password is a Secrets Manager secret", () => {
    const { template: serverless } = synth({ hourglass: { redis: { kind: "serverless" } } });
    // The functions' user, and the group's disabled `default` (test/infra/profiles.test.ts).
    serverless.resourceCountIs("AWS::ElastiCache::User", 2);
    serverless.resourceCountIs("AWS::ElastiCache::UserGroup", 1);
    const cache = Object.values(serverless.findResources("AWS::ElastiCache::ServerlessCache"))[0]!;
    expect(cache.Properties.UserGroupId).toBeDefined();
    const user = Object.values(serverless.findResources("AWS::ElastiCache::User")).find(
      (u) => u.Properties.UserName === "hourglass",
    )!;
    expect(JSON.stringify(user.Properties)).toContain("resolve:secretsmanager");
    expect(JSON.stringify(user.Properties.AuthenticationMode)).toContain("password");
  });

  it("creates no secret a mode does not use", () => {
    const { template: external } = synth({
      hourglass: { production: false, redis: { kind: "external", url: "redis://redis:6379" } },
    });
    external.resourceCountIs("AWS::SecretsManager::Secret", 1); // the webhook master secret only
  });

  it("requires rediss:// and a Secrets Manager password for an external Redis in production", () => {
    const build = (redis: { url: string }) => () =>
      new Hourglass(new Stack(new App({ context: { "aws:cdk:bundling-stacks": [] } })), "H", {
        redis: { kind: "external", ...redis },
      });
    expect(build({ url: "redis://cache.internal:6379" })).toThrow(HourglassPropsError);
    expect(build({ url: "rediss://:plaintext@cache.internal:6379" })).toThrow(/password/);
    expect(build({ url: "rediss://cache.internal:6379" })).toThrow(/passwordSecret/);
    const stack = new Stack(new App({ context: { "aws:cdk:bundling-stacks": [] } }));
    const secret = new secretsmanager.Secret(stack, "RedisPassword");
    expect(
      () =>
        new Hourglass(stack, "H", {
          redis: { kind: "external", url: "rediss://cache.internal:6379", passwordSecret: secret },
        }),
    ).not.toThrow();
  });
});
