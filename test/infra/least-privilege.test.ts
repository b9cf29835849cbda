import { App, Stack } from "aws-cdk-lib";
import { Template, type Template as TemplateType } from "aws-cdk-lib/assertions";
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

/** Which logical resource a policy statement's Resource points at, by the construct ids. */
const TARGETS: [RegExp, string][] = [
  [/HourglassEvents/, "events"],
  [/HourglassLeases/, "leases"],
  [/HourglassLedger/, "ledger"],
  [/HourglassSchedules/, "schedules"],
  [/HourglassWebhookSecret/, "webhookSecret"],
  [/HourglassCacheAuth/, "cacheAuth"],
  [/HourglassWorkQueue(?!Dlq)/, "queue"],
  [/HourglassRedisPassword|external-redis/, "redisSecret"],
  [/HourglassEventBus/, "eventBus"],
];

/** Every action a function's role may take on each Hourglass resource. */
function grantsOf(template: TemplateType, fn: "Api" | "Dispatcher" | "Worker") {
  const resources = template.toJSON().Resources as Resources;
  const roleId = Object.keys(resources).find(
    (id) => resources[id]!.Type === "AWS::IAM::Role" && id.startsWith(`Hourglass${fn}FunctionServiceRole`),
  )!;
  const grants: Record<string, Set<string>> = {};
  for (const resource of Object.values(resources)) {
    if (resource.Type !== "AWS::IAM::Policy") continue;
    if (!JSON.stringify(resource.Properties.Roles).includes(`"${roleId}"`)) continue;
    const document = resource.Properties.PolicyDocument as {
      Statement: { Action: string | string[]; Resource: unknown }[];
    };
    for (const statement of document.Statement) {
      const actions = [statement.Action].flat();
      const text = JSON.stringify(statement.Resource);
      for (const [pattern, name] of TARGETS) {
        if (!pattern.test(text)) continue;
        grants[name] ??= new Set();
        for (const action of actions) grants[name]!.add(action);
      }
    }
  }
  return Object.fromEntries(Object.entries(grants).map(([k, v]) => [k, [...v].sort()]));
}

const JOURNAL = [
  "dynamodb:BatchGetItem",
  "dynamodb:GetItem",
  "dynamodb:PutItem",
  "dynamodb:Query",
  "dynamodb:UpdateItem",
];
/** The ledger's transactions read their counters' sequence numbers in a batch first. */
const LEDGER = [
  "dynamodb:BatchGetItem",
  "dynamodb:GetItem",
  "dynamodb:PutItem",
  "dynamodb:Query",
  "dynamodb:UpdateItem",
];
const SECRET = ["secretsmanager:DescribeSecret", "secretsmanager:GetSecretValue"];

describe("least privilege (issue 9)", () => {
  const { template } = synth();

  it("grants each function exactly what its code calls", () => {
    expect(grantsOf(template, "Api")).toEqual({
      // BatchWriteItem: a batch of events whose ids the API generated (EventJournal.createMany).
      events: [...JOURNAL, "dynamodb:BatchWriteItem", "dynamodb:DescribeTable"].sort(),
      leases: ["dynamodb:GetItem", "dynamodb:UpdateItem"],
      ledger: LEDGER,
      queue: ["sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:SendMessage"],
      webhookSecret: SECRET,
      cacheAuth: SECRET,
      eventBus: ["events:PutEvents"],
      schedules: [
        "dynamodb:DeleteItem",
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:Query",
        "dynamodb:UpdateItem",
      ],
    });
    // No ledger, no webhook signing secret; schedules only found due and advanced.
    expect(grantsOf(template, "Dispatcher")).toEqual({
      events: JOURNAL,
      leases: ["dynamodb:GetItem", "dynamodb:UpdateItem"],
      queue: ["sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:SendMessage"],
      cacheAuth: SECRET,
      eventBus: ["events:PutEvents"],
      schedules: ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem"],
    });
    const worker = grantsOf(template, "Worker");
    expect(worker.events).toEqual(JOURNAL);
    expect(worker.leases).toEqual(["dynamodb:GetItem"]);
    expect(worker.ledger).toEqual(LEDGER);
    expect(worker.webhookSecret).toEqual(SECRET);
    expect(worker.cacheAuth).toEqual(SECRET);
    expect(worker.eventBus).toEqual(["events:PutEvents"]);
    expect(worker.schedules).toBeUndefined();
    // The event source mapping's receive and delete, and the worker's own sends: retries and
    // callbacks due within the look-ahead (SendMessageBatch is authorized as SendMessage).
    expect(worker.queue).toEqual([
      "sqs:ChangeMessageVisibility",
      "sqs:DeleteMessage",
      "sqs:GetQueueAttributes",
      "sqs:GetQueueUrl",
      "sqs:ReceiveMessage",
      "sqs:SendMessage",
    ]);
    for (const fn of ["Api", "Dispatcher", "Worker"] as const) {
      const all = Object.values(grantsOf(template, fn)).flat();
      expect(all, `${fn} dynamodb:Scan`).not.toContain("dynamodb:Scan");
      // Only the API deletes (schedules) and batch-writes (events whose ids it generated).
      if (fn === "Api") continue;
      for (const unused of ["dynamodb:DeleteItem", "dynamodb:BatchWriteItem"])
        expect(all, `${fn} ${unused}`).not.toContain(unused);
    }
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
