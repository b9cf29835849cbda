import { readFileSync } from "node:fs";
import { App, Stack, Validations } from "aws-cdk-lib";
import { Annotations, Match, Template } from "aws-cdk-lib/assertions";
import { Vpc } from "aws-cdk-lib/aws-ec2";
import { AccountRootPrincipal, Role } from "aws-cdk-lib/aws-iam";
import { AwsSolutionsChecks } from "cdk-nag";
import { describe, expect, it } from "vitest";
import { CACHE_USER } from "../../infra/construct/data.ts";
import { Hourglass } from "../../infra/construct/hourglass.ts";
import { HourglassPropsError } from "../../infra/construct/props.ts";
import { acknowledgeFindings } from "../../infra/nag.ts";
import { HourglassStack, type HourglassStackProps } from "../../infra/stacks/hourglass-stack.ts";

// Bundling is skipped (the `cdk synth` test bundles); these tests read the templates.
const synth = (hourglass: HourglassStackProps["hourglass"] = {}) => {
  const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
  const stack = new HourglassStack(app, "Test", {
    env: { account: "111111111111", region: "eu-west-1" },
    hourglass,
  });
  return { app, stack, template: Template.fromStack(stack) };
};

const hourglassFunctions = (template: Template) =>
  Object.values(template.findResources("AWS::Lambda::Function")).filter(
    (f) => f.Properties.Environment?.Variables?.HOURGLASS_MODE === "aws",
  );

const passesNag = (app: App) => {
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  expect(() => app.synth()).not.toThrow();
};

describe("egress", () => {
  it("delivers webhooks by default: a NAT gateway per AZ in production, the functions behind it", () => {
    const { stack, template } = synth();
    template.resourceCountIs("AWS::EC2::NatGateway", 2);
    for (const fn of hourglassFunctions(template)) {
      expect(fn.Properties.Environment.Variables.HOURGLASS_INTERNET_EGRESS).toBe("true");
    }
    // The functions' subnets route 0.0.0.0/0 to a NAT gateway.
    const routes = Object.values(template.findResources("AWS::EC2::Route")).filter(
      (r) => r.Properties.NatGatewayId,
    );
    expect(routes).toHaveLength(2);
    expect(stack.hourglass.hasInternetEgress).toBe(true);
    Annotations.fromStack(stack).hasNoWarning("*", Match.stringLikeRegexp("no internet egress"));
  });

  it("uses one NAT gateway outside production, and in the lean profile when asked", () => {
    synth({ production: false }).template.resourceCountIs("AWS::EC2::NatGateway", 1);
    const lean = synth({ profile: "lean", egress: "nat-gateway" }).template;
    lean.resourceCountIs("AWS::EC2::NatGateway", 1);
    lean.resourceCountIs("AWS::EC2::Instance", 0);
  });

  it("warns at synth time, and tells the functions, when there is no egress", () => {
    const { stack, template } = synth({ egress: "none" });
    template.resourceCountIs("AWS::EC2::NatGateway", 0);
    for (const fn of hourglassFunctions(template)) {
      expect(fn.Properties.Environment.Variables.HOURGLASS_INTERNET_EGRESS).toBe("false");
    }
    Annotations.fromStack(stack).hasWarning("*", Match.stringLikeRegexp("has no internet egress"));
  });

  it("passes webhookAllowPrivate to the functions", () => {
    const { template } = synth({ webhookAllowPrivate: true });
    for (const fn of hourglassFunctions(template)) {
      expect(fn.Properties.Environment.Variables.HOURGLASS_WEBHOOK_ALLOW_PRIVATE).toBe("true");
    }
  });

  it("refuses egress with a VPC of the user's, where its subnets decide", () => {
    const stack = new Stack(new App(), "Own");
    const vpc = new Vpc(stack, "Vpc");
    expect(() => new Hourglass(stack, "Hourglass", { vpc, egress: "nat-gateway" })).toThrow(
      HourglassPropsError,
    );
  });
});

describe("the LocalStack variant", () => {
  it("drives the dispatcher with an EventBridge rule every minute instead of Scheduler", () => {
    const { stack, template } = synth({ production: false, dispatchTrigger: "events-rule" });
    template.resourceCountIs("AWS::Scheduler::Schedule", 0);
    const dispatcher = stack.getLogicalId(stack.hourglass.dispatcherFunction.node.defaultChild as never);
    template.hasResourceProperties("AWS::Events::Rule", {
      ScheduleExpression: "rate(1 minute)",
      State: "ENABLED",
      Targets: [
        Match.objectLike({
          Arn: { "Fn::GetAtt": [dispatcher, "Arn"] },
          RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 60 },
          DeadLetterConfig: { Arn: Match.anyValue() },
        }),
      ],
    });
    template.hasResourceProperties("AWS::Lambda::Permission", {
      Action: "lambda:InvokeFunction",
      Principal: "events.amazonaws.com",
      FunctionName: { "Fn::GetAtt": [dispatcher, "Arn"] },
    });
  });

  it("passes cdk-nag", () => {
    passesNag(synth({ production: false, dispatchTrigger: "events-rule" }).app);
  });
});

describe("the lean profile", () => {
  const { app, stack, template } = synth({ profile: "lean" });

  it("uses ElastiCache Serverless (Valkey) instead of a replication group", () => {
    template.resourceCountIs("AWS::ElastiCache::ReplicationGroup", 0);
    template.hasResourceProperties("AWS::ElastiCache::ServerlessCache", { Engine: "valkey" });
  });

  it("gives the user group a user named default, switched off, beside the functions' user", () => {
    // "A user named default must be included" (AWS::ElastiCache::UserGroup, UserIds).
    const users = template.findResources("AWS::ElastiCache::User");
    const logicalIdOf = (name: string) =>
      Object.entries(users).find(([, u]) => u.Properties.UserName === name)?.[0];
    const defaultId = logicalIdOf("default");
    const hourglassId = logicalIdOf(CACHE_USER);
    expect(defaultId).toBeDefined();
    expect(hourglassId).toBeDefined();
    const disabled = users[defaultId!]!.Properties;
    expect(disabled.AccessString).toBe("off -@all");
    // A valkey user group admits only users with a password (or IAM); an "off" user cannot use it.
    expect(disabled.AuthenticationMode.Type).toBe("password");
    expect(disabled.UserId).not.toEqual(users[hourglassId!]!.Properties.UserId);
    expect(users[hourglassId!]!.Properties.AccessString).toMatch(/^on /);
    const group = Object.values(template.findResources("AWS::ElastiCache::UserGroup"))[0]!;
    expect(group.Properties.UserIds).toEqual([disabled.UserId, users[hourglassId!]!.Properties.UserId]);
    expect(group.DependsOn).toEqual(expect.arrayContaining([defaultId, hourglassId]));
  });

  it("goes out through one NAT instance, with no NAT gateway and no interface endpoint", () => {
    template.resourceCountIs("AWS::EC2::NatGateway", 0);
    template.resourceCountIs("AWS::EC2::EIP", 0);
    template.resourceCountIs("AWS::EC2::Instance", 1);
    template.hasResourceProperties("AWS::EC2::Instance", {
      InstanceType: "t4g.nano",
      SourceDestCheck: false,
    });
    const instance = stack.getLogicalId(stack.hourglass.nat!.gatewayInstances[0]!.node.defaultChild as never);
    // Both private subnets route to the internet through it.
    const routes = Object.values(template.findResources("AWS::EC2::Route")).filter(
      (r) => r.Properties.InstanceId,
    );
    expect(routes.map((r) => r.Properties)).toEqual([
      expect.objectContaining({ DestinationCidrBlock: "0.0.0.0/0", InstanceId: { Ref: instance } }),
      expect.objectContaining({ DestinationCidrBlock: "0.0.0.0/0", InstanceId: { Ref: instance } }),
    ]);
    // The AWS APIs go through it too; DynamoDB keeps its free gateway endpoint.
    const endpoints = Object.values(template.findResources("AWS::EC2::VPCEndpoint"));
    expect(endpoints.map((e) => e.Properties.VpcEndpointType)).toEqual(["Gateway"]);
    expect(JSON.stringify(endpoints[0]!.Properties.ServiceName)).toContain("dynamodb");
    for (const fn of hourglassFunctions(template))
      expect(fn.Properties.Environment.Variables.HOURGLASS_INTERNET_EGRESS).toBe("true");
  });

  it("keeps interface endpoints in one AZ when it has no egress, the only way to the AWS APIs then", () => {
    const endpoints = Object.values(
      synth({ profile: "lean", egress: "none" }).template.findResources("AWS::EC2::VPCEndpoint"),
    ).filter((e) => e.Properties.VpcEndpointType === "Interface");
    expect(endpoints).toHaveLength(2); // SQS, Secrets Manager
    for (const endpoint of endpoints) expect(endpoint.Properties.SubnetIds).toHaveLength(1);
  });

  it("encrypts its tables with DynamoDB's own key, which makes no KMS requests", () => {
    const tables = Object.values(template.findResources("AWS::DynamoDB::GlobalTable"));
    expect(tables).toHaveLength(4);
    for (const table of tables) expect(table.Properties.SSESpecification).toEqual({ SSEEnabled: false });
    // The standard profile keeps the AWS managed key, whose use shows in CloudTrail.
    const standard = Object.values(synth().template.findResources("AWS::DynamoDB::GlobalTable"));
    for (const table of standard)
      expect(table.Properties.SSESpecification).toEqual({ SSEEnabled: true, SSEType: "KMS" });
  });

  it("serves an HTTP API with IAM authorization on every route, throttling and access logs, and no REST API", () => {
    template.resourceCountIs("AWS::ApiGateway::RestApi", 0);
    template.resourceCountIs("AWS::ApiGatewayV2::Api", 1);
    const routes = Object.values(template.findResources("AWS::ApiGatewayV2::Route"));
    expect(routes.length).toBeGreaterThan(0);
    for (const route of routes) expect(route.Properties.AuthorizationType).toBe("AWS_IAM");
    template.hasResourceProperties("AWS::ApiGatewayV2::Integration", { PayloadFormatVersion: "1.0" });
    template.hasResourceProperties("AWS::ApiGatewayV2::Stage", {
      StageName: "$default",
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingRateLimit: 1000, ThrottlingBurstLimit: 2000 },
      AccessLogSettings: Match.objectLike({ DestinationArn: Match.anyValue() }),
    });
    expect(stack.hourglass.api).toBeUndefined();
    expect(stack.hourglass.httpApi).toBeDefined();
  });

  it("refuses what the lean profile cannot give", () => {
    const stack = new Stack(new App(), "Bad");
    expect(
      () =>
        new Hourglass(stack, "Hourglass", {
          profile: "lean",
          apiKeys: true,
          redis: { kind: "replication-group" },
        }),
    ).toThrow(HourglassPropsError);
  });

  it("passes cdk-nag", () => {
    passesNag(app);
  });
});

describe("admins and operators", () => {
  it("names the admin roles to the functions, grants them what the CLI needs, and exports what it reads", () => {
    const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
    const stack = new HourglassStack(app, "Ops", { env: { account: "111111111111", region: "eu-west-1" } });
    const admin = new Role(stack, "OnCall", { assumedBy: new AccountRootPrincipal() });
    const hourglass = new Hourglass(stack, "Admined", { production: false, admins: [admin] });
    acknowledgeFindings(hourglass);
    const template = Template.fromStack(stack);
    const adminRef = { "Fn::GetAtt": [stack.getLogicalId(admin.node.defaultChild as never), "Arn"] };
    const functions = Object.values(template.findResources("AWS::Lambda::Function")).filter(
      (f) => f.Properties.Environment?.Variables?.HOURGLASS_ADMIN_PRINCIPALS,
    );
    expect(functions).toHaveLength(3);
    for (const fn of functions)
      expect(fn.Properties.Environment.Variables.HOURGLASS_ADMIN_PRINCIPALS).toEqual(adminRef);
    const statements = Object.values(template.findResources("AWS::IAM::Policy"))
      .filter((p) =>
        JSON.stringify(p.Properties.Roles).includes(stack.getLogicalId(admin.node.defaultChild as never)),
      )
      .flatMap((p) => p.Properties.PolicyDocument.Statement as { Action: string | string[] }[]);
    const actions = statements.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]));
    expect(actions).toEqual(
      expect.arrayContaining([
        "scheduler:GetSchedule",
        "scheduler:UpdateSchedule",
        "iam:PassRole",
        "sqs:GetQueueAttributes",
        "cloudwatch:DescribeAlarms",
        "execute-api:Invoke",
      ]),
    );
    for (const output of [
      "DispatchSchedule",
      "DispatchScheduleGroup",
      "WorkQueueUrl",
      "DeadLetterQueueUrl",
      "AlarmNames",
      "ApiUrl",
    ]) {
      template.hasOutput(output, Match.anyValue());
    }
    passesNag(app);
  });
});

describe("admins named by ARN (-c admins=…)", () => {
  const ops = "arn:aws:iam::123456789012:role/Ops";
  const onCall = "arn:aws:iam::123456789012:role/team/OnCall";

  it("names the roles to the functions and never edits a role the stack does not own", () => {
    const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
    const stack = new HourglassStack(app, "Named", {
      env: { account: "111111111111", region: "eu-west-1" },
      hourglass: { production: false },
      adminRoleArns: [ops, onCall],
    });
    const template = Template.fromStack(stack);
    for (const fn of hourglassFunctions(template))
      expect(fn.Properties.Environment.Variables.HOURGLASS_ADMIN_PRINCIPALS).toBe(`${ops},${onCall}`);
    expect(stack.hourglass.admins.map((role) => role.roleArn)).toEqual([ops, onCall]);
    // Imported immutable: grantOperate adds no policy to them, so nothing here can change them.
    const policies = JSON.stringify(template.findResources("AWS::IAM::Policy"));
    expect(policies).not.toContain("Ops");
    expect(policies).not.toContain("OnCall");
    passesNag(app);
  });

  it("refuses anything that is not a role ARN, before building anything", () => {
    const build = (arn: string) => () =>
      new HourglassStack(new App({ context: { "aws:cdk:bundling-stacks": [] } }), "Bad", {
        adminRoleArns: [arn],
      });
    expect(build("Ops")).toThrow(/admins must be IAM role ARNs/);
    expect(build("arn:aws:iam::123456789012:user/alice")).toThrow(/admins must be IAM role ARNs/);
  });
});

describe("the LocalStack pin", () => {
  it("names one exact LocalStack version, the same in docker-compose.yml and the smoke test", () => {
    const compose = readFileSync("docker-compose.yml", "utf8");
    const smoke = readFileSync("test/localstack/smoke.localstack.ts", "utf8");
    const pinned = /image: (localstack\/localstack:\d+\.\d+\.\d+)\b/.exec(compose)?.[1];
    expect(pinned).toBeDefined();
    expect(smoke).toContain(`"${pinned}"`);
    // Its Lambda runtimes include nodejs24.x (added by localstack/localstack#13410, 2025-11-24),
    // the runtime the functions use.
    const { template } = synth({ production: false, dispatchTrigger: "events-rule" });
    for (const fn of hourglassFunctions(template)) expect(fn.Properties.Runtime).toBe("nodejs24.x");
  });
});
