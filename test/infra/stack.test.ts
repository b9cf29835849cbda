import { App, Duration, Stack, Validations } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import { Role, ServicePrincipal } from "aws-cdk-lib/aws-iam";
import { Code, Function as LambdaFunction, Runtime } from "aws-cdk-lib/aws-lambda";
import { AwsSolutionsChecks } from "cdk-nag";
import { describe, expect, it } from "vitest";
import { Hourglass } from "../../infra/construct/hourglass.ts";
import { HourglassPropsError } from "../../infra/construct/props.ts";
import { acknowledgeFindings } from "../../infra/nag.ts";
import { HourglassStack, type HourglassStackProps } from "../../infra/stacks/hourglass-stack.ts";

// Bundling is skipped here (it is exercised by the `cdk synth` test); assertions read the template.
const synth = (props: HourglassStackProps = {}) => {
  const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
  const stack = new HourglassStack(app, "Test", {
    env: { account: "111111111111", region: "eu-west-1" },
    ...props,
  });
  return { app, stack, template: Template.fromStack(stack) };
};

/** The logical id of one of the three Hourglass functions. */
const hourglassFunctionId = (template: Template, role: "Api" | "Dispatcher" | "Worker") =>
  Object.keys(template.findResources("AWS::Lambda::Function")).find((id) =>
    id.startsWith(`Hourglass${role}Function`),
  )!;

describe("HourglassStack", () => {
  const { template } = synth();

  it("runs three arm64 functions on Node.js 22 or newer, with log retention", () => {
    const functions = template.findResources("AWS::Lambda::Function");
    const hourglassFunctions = Object.values(functions).filter(
      (f) => f.Properties.Environment?.Variables?.HOURGLASS_MODE === "aws",
    );
    expect(hourglassFunctions).toHaveLength(3);
    for (const fn of hourglassFunctions) {
      expect(fn.Properties.Architectures).toEqual(["arm64"]);
      expect(Number(/nodejs(\d+)\.x/.exec(fn.Properties.Runtime)?.[1])).toBeGreaterThanOrEqual(22);
      expect(fn.Properties.VpcConfig).toBeDefined();
    }
    template.allResourcesProperties("AWS::Logs::LogGroup", { RetentionInDays: 30 });
  });

  it("encrypts the work queue and gives it a DLQ with a redrive policy", () => {
    template.hasResourceProperties("AWS::SQS::Queue", {
      SqsManagedSseEnabled: true,
      VisibilityTimeout: 360,
      RedrivePolicy: { deadLetterTargetArn: Match.anyValue(), maxReceiveCount: 5 },
    });
    template.allResourcesProperties("AWS::SQS::Queue", { SqsManagedSseEnabled: true });
  });

  it("feeds the worker from SQS with partial batch responses and a maximum concurrency", () => {
    template.hasResourceProperties("AWS::Lambda::EventSourceMapping", {
      BatchSize: 10,
      FunctionResponseTypes: ["ReportBatchItemFailures"],
      ScalingConfig: { MaximumConcurrency: 50 },
    });
  });

  it("invokes the dispatcher every minute through EventBridge Scheduler, with retries and a DLQ", () => {
    template.hasResourceProperties("AWS::Scheduler::Schedule", {
      ScheduleExpression: "rate(1 minute)",
      Target: Match.objectLike({
        RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 60 },
        DeadLetterConfig: { Arn: Match.anyValue() },
      }),
    });
  });

  it("runs the dispatcher's asynchronous invocations without Lambda's retries, dropping a tick older than a minute", () => {
    const dispatcher = hourglassFunctionId(template, "Dispatcher");
    template.resourceCountIs("AWS::Lambda::EventInvokeConfig", 1);
    template.hasResourceProperties("AWS::Lambda::EventInvokeConfig", {
      FunctionName: { Ref: dispatcher },
      Qualifier: "$LATEST",
      MaximumRetryAttempts: 0,
      MaximumEventAgeInSeconds: 60,
    });
  });

  it("reserves no concurrency by default, so an account at a new account's quota can deploy", () => {
    for (const fn of Object.values(template.findResources("AWS::Lambda::Function")))
      expect(fn.Properties.ReservedConcurrentExecutions).toBeUndefined();
  });

  it("reserves the dispatcher's concurrency, and only the dispatcher's, when asked", () => {
    const { template: reserved } = synth({ hourglass: { dispatcherReservedConcurrency: 1 } });
    const functions = reserved.findResources("AWS::Lambda::Function");
    const dispatcher = hourglassFunctionId(reserved, "Dispatcher");
    expect(functions[dispatcher]!.Properties.ReservedConcurrentExecutions).toBe(1);
    const others = Object.entries(functions).filter(([id]) => id !== dispatcher);
    for (const [id, fn] of others) expect(fn.Properties.ReservedConcurrentExecutions, id).toBeUndefined();
    const none = synth({ hourglass: { dispatcherReservedConcurrency: "none" } }).template;
    expect(
      none.findResources("AWS::Lambda::Function")[dispatcher]!.Properties.ReservedConcurrentExecutions,
    ).toBeUndefined();
  });

  it("refuses a reservation that would stop the dispatcher, or one given twice", () => {
    const build = (props: ConstructorParameters<typeof Hourglass>[2]) => () =>
      new Hourglass(new Stack(new App({ context: { "aws:cdk:bundling-stacks": [] } })), "H", props);
    expect(build({ dispatcherReservedConcurrency: 0 })).toThrow(/dispatcherReservedConcurrency/);
    expect(build({ dispatcherReservedConcurrency: 1.5 })).toThrow(HourglassPropsError);
    expect(
      build({
        dispatcherReservedConcurrency: 1,
        overrides: { dispatcherFunction: { reservedConcurrentExecutions: 2 } },
      }),
    ).toThrow(/give one/);
  });

  it("puts IAM authorization on every API method, with throttling and access logs", () => {
    const methods = Object.values(template.findResources("AWS::ApiGateway::Method"));
    expect(methods.length).toBeGreaterThan(0);
    for (const method of methods) expect(method.Properties.AuthorizationType).toBe("AWS_IAM");
    template.hasResourceProperties("AWS::ApiGateway::Stage", {
      AccessLogSetting: Match.objectLike({ DestinationArn: Match.anyValue() }),
      MethodSettings: Match.arrayWith([
        Match.objectLike({ ThrottlingRateLimit: 1000, ThrottlingBurstLimit: 2000 }),
      ]),
    });
  });

  it("keeps the tables on demand, with point-in-time recovery, TTL and deletion protection", () => {
    const tables = template.findResources("AWS::DynamoDB::GlobalTable");
    expect(Object.keys(tables)).toHaveLength(4);
    for (const table of Object.values(tables)) {
      expect(table.Properties.BillingMode).toBe("PAY_PER_REQUEST");
      expect(table.Properties.Replicas[0].PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled).toBe(
        true,
      );
      expect(table.Properties.Replicas[0].DeletionProtectionEnabled).toBe(true);
      expect(table.DeletionPolicy).toBe("Retain");
    }
    template.hasResourceProperties("AWS::DynamoDB::GlobalTable", {
      TimeToLiveSpecification: { AttributeName: "ttl", Enabled: true },
      GlobalSecondaryIndexes: Match.arrayWith([Match.objectLike({ IndexName: "pending" })]),
    });
    template.hasResourceProperties("AWS::DynamoDB::GlobalTable", {
      GlobalSecondaryIndexes: [Match.objectLike({ IndexName: "due", Projection: { ProjectionType: "ALL" } })],
    });
  });

  it("runs Valkey with TLS, AUTH, encryption at rest and a Multi-AZ replica", () => {
    template.hasResourceProperties("AWS::ElastiCache::ReplicationGroup", {
      Engine: "valkey",
      TransitEncryptionEnabled: true,
      AtRestEncryptionEnabled: true,
      MultiAZEnabled: true,
      NumCacheClusters: 2,
      AuthToken: Match.anyValue(),
    });
  });

  it("alarms on the DLQ, dispatcher errors and missed runs, overdue lag and worker errors", () => {
    const alarms = Object.values(template.findResources("AWS::CloudWatch::Alarm"));
    const names = alarms.map((a) => a.Properties.MetricName);
    expect(names).toEqual(
      expect.arrayContaining([
        "ApproximateNumberOfMessagesVisible",
        "Errors",
        "Invocations",
        "OldestOverdueMs",
      ]),
    );
    template.resourceCountIs("AWS::CloudWatch::Dashboard", 1);
  });

  it("alarms on the work queue's oldest message past the look-ahead, a visibility timeout and a minute", () => {
    template.hasResourceProperties("AWS::CloudWatch::Alarm", {
      Namespace: "AWS/SQS",
      MetricName: "ApproximateAgeOfOldestMessage",
      Dimensions: [
        {
          Name: "QueueName",
          Value: { "Fn::GetAtt": [Match.stringLikeRegexp("^HourglassWorkQueue"), "QueueName"] },
        },
      ],
      Statistic: "Maximum",
      Period: 60,
      // 120 s look-ahead + 360 s visibility timeout + 60 s.
      Threshold: 540,
      EvaluationPeriods: 3,
      ComparisonOperator: "GreaterThanThreshold",
    });
    const { template: longer } = synth({ hourglass: { lookAhead: Duration.minutes(10) } });
    longer.hasResourceProperties("AWS::CloudWatch::Alarm", {
      MetricName: "ApproximateAgeOfOldestMessage",
      Threshold: 600 + 360 + 60,
    });
  });

  it("alarms on start lateness p99 above 1.5 s in 3 of 5 minutes, not on one slow minute", () => {
    template.hasResourceProperties("AWS::CloudWatch::Alarm", {
      Namespace: "Hourglass",
      MetricName: "LatenessMs",
      Dimensions: [{ Name: "service", Value: "worker" }],
      ExtendedStatistic: "p99",
      Period: 60,
      Threshold: 1_500,
      EvaluationPeriods: 5,
      DatapointsToAlarm: 3,
      ComparisonOperator: "GreaterThanThreshold",
      TreatMissingData: "notBreaching",
    });
  });

  it("names every alarm in the AlarmNames output", () => {
    const alarms = Object.keys(template.findResources("AWS::CloudWatch::Alarm"));
    expect(alarms).toHaveLength(10);
    const names = template.findOutputs("AlarmNames").AlarmNames!.Value["Fn::Join"][1] as { Ref: string }[];
    expect(names.map((n) => n.Ref).sort()).toEqual(alarms.sort());
  });

  it("reaches the internet by default (a NAT gateway per AZ), with endpoints for DynamoDB, SQS and Secrets Manager (EventBridge only when transitions are published)", () => {
    template.resourceCountIs("AWS::EC2::NatGateway", 2);
    template.resourceCountIs("AWS::EC2::VPCEndpoint", 3);
  });

  it("drops deletion protection and retention when production is off", () => {
    const { template: dev } = synth({ hourglass: { production: false, redis: { kind: "serverless" } } });
    for (const table of Object.values(dev.findResources("AWS::DynamoDB::GlobalTable"))) {
      expect(table.DeletionPolicy).toBe("Delete");
    }
    dev.resourceCountIs("AWS::ElastiCache::ServerlessCache", 1);
  });

  it("passes cdk-nag's AwsSolutions checks with every acknowledgment carrying a reason", () => {
    const { app } = synth();
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    expect(() => app.synth()).not.toThrow();
  });
});

describe("Hourglass construct props", () => {
  it("reports every problem at once, before building anything", () => {
    const app = new App();
    const error = (() => {
      try {
        new Hourglass(new Stack(app, "Bad"), "Hourglass", {
          shards: 0,
          workerMaxConcurrency: 1,
          throttle: { rateLimit: 10, burstLimit: 5 },
          lookAhead: Duration.hours(1),
          indexHorizon: Duration.minutes(30),
          overrides: { queue: { visibilityTimeout: Duration.seconds(10) } },
        });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(HourglassPropsError);
    const problems = (error as HourglassPropsError).problems;
    expect(problems).toHaveLength(6);
    for (const prop of [
      "shards",
      "workerMaxConcurrency",
      "throttle",
      "lookAhead",
      "indexHorizon",
      "overrides.queue.visibilityTimeout",
    ]) {
      expect(problems.some((p) => p.startsWith(prop))).toBe(true);
    }
    expect(app.node.findAll().filter((c) => c.node.id === "Vpc")).toHaveLength(0);
  });
});

describe("Hourglass construct overrides", () => {
  it("merges the user's props over Hourglass's defaults, but never over the keys, the bundle or the wiring", () => {
    const { template } = synth({
      hourglass: {
        production: false,
        overrides: {
          tables: { deletionProtection: true },
          queue: { retentionPeriod: Duration.days(4), visibilityTimeout: Duration.minutes(6) },
          functions: { memorySize: 1024, environment: { MY_FLAG: "on" } },
          workerFunction: { memorySize: 2048 },
        },
      },
    });
    // Tables: the override applies, and the key schema is still the one the code queries.
    const tables = Object.values(template.findResources("AWS::DynamoDB::GlobalTable"));
    expect(tables).toHaveLength(4);
    for (const table of tables) {
      expect(JSON.stringify(table.Properties.Replicas)).toContain('"DeletionProtectionEnabled":true');
      expect(table.Properties.KeySchema[0]).toMatchObject({ AttributeName: "pk", KeyType: "HASH" });
    }
    // Queue: retention changed, the redrive to the dead-letter queue kept.
    template.hasResourceProperties("AWS::SQS::Queue", {
      MessageRetentionPeriod: 4 * 86_400,
      VisibilityTimeout: 360,
      RedrivePolicy: Match.objectLike({ maxReceiveCount: Match.anyValue() }),
    });
    // Functions: per-role beats all-functions beats the defaults; Hourglass's variables survive.
    const functions = Object.values(template.findResources("AWS::Lambda::Function")).filter(
      (fn) => fn.Properties.Environment?.Variables?.HOURGLASS_MODE === "aws",
    );
    expect(functions.map((fn) => fn.Properties.MemorySize).sort()).toEqual([1024, 1024, 2048]);
    for (const fn of functions) {
      expect(fn.Properties.Environment.Variables.MY_FLAG).toBe("on");
      expect(fn.Properties.Handler).toBe("index.handler");
    }
  });
});

describe("Hourglass.grantInvoke", () => {
  it("grants execute-api:Invoke on the API's stage, and nothing more", () => {
    const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
    const stack = new HourglassStack(app, "Grant", { env: { account: "111111111111", region: "eu-west-1" } });
    const role = new Role(stack, "Caller", { assumedBy: new ServicePrincipal("lambda.amazonaws.com") });
    stack.hourglass.grantInvoke(role);
    Template.fromStack(stack).hasResourceProperties("AWS::IAM::Policy", {
      PolicyDocument: { Statement: [Match.objectLike({ Action: "execute-api:Invoke", Effect: "Allow" })] },
      Roles: [{ Ref: Match.stringLikeRegexp("Caller") }],
    });
  });
});

describe("handler functions", () => {
  it("lets the worker invoke the user's functions, through a Lambda endpoint, and still passes cdk-nag", () => {
    const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
    const stack = new Stack(app, "Custom", { env: { account: "111111111111", region: "eu-west-1" } });
    const remind = new LambdaFunction(stack, "Remind", {
      runtime: Runtime.NODEJS_24_X,
      handler: "index.handler",
      code: Code.fromInline("exports.handler = async () => {};"),
    });
    const hourglass = new Hourglass(stack, "Hourglass", { handlerFunctions: { "invoice.remind": remind } });
    acknowledgeFindings(hourglass);
    Validations.of(stack).acknowledge(
      {
        id: "AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
        reason: "test function",
      },
      { id: "AwsSolutions::AwsSolutions-L1", reason: "test function" },
    );
    const template = Template.fromStack(stack);
    template.resourceCountIs("AWS::EC2::VPCEndpoint", 4); // DynamoDB, SQS, Secrets Manager, Lambda
    const worker = Object.values(template.findResources("AWS::Lambda::Function")).find((f) =>
      JSON.stringify(f.Properties.Environment?.Variables ?? {}).includes("HOURGLASS_LAMBDA_TARGETS"),
    );
    expect(worker).toBeDefined();
    template.hasResourceProperties("AWS::IAM::Policy", {
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Action: "lambda:InvokeFunction" })]) },
    });
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    expect(() => app.synth()).not.toThrow();
  });

  it("refuses a handler function under a name that is not an event type", () => {
    const stack = new Stack(new App(), "Bad");
    const fn = LambdaFunction.fromFunctionArn(
      stack,
      "Fn",
      "arn:aws:lambda:eu-west-1:111111111111:function:x",
    );
    expect(() => new Hourglass(stack, "Hourglass", { handlerFunctions: { "Not A Type": fn } })).toThrow(
      HourglassPropsError,
    );
  });
});
