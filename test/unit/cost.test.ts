import { describe, expect, it } from "vitest";
import { bill, qstashUsd, schedulerUsd } from "../../scripts/cost/bill.ts";
import { UnpricedResourceError } from "../../scripts/cost/errors.ts";
import { customMetrics, fixedResources } from "../../scripts/cost/fixed.ts";
import type { LambdaMeasurement } from "../../scripts/cost/measured.ts";
import type { CfnTemplate } from "../../scripts/cost/template.ts";

/** A hand-made template: the bill must price exactly what is in it, at us-east-1 prices. */
const subnet = (publicIp: boolean) => ({
  Type: "AWS::EC2::Subnet",
  Properties: { MapPublicIpOnLaunch: publicIp },
});
const endpoint = (service: string) => ({
  Type: "AWS::EC2::VPCEndpoint",
  Properties: {
    VpcEndpointType: "Interface",
    ServiceName: `com.amazonaws.us-east-1.${service}`,
    SubnetIds: [{ Ref: "PrivateA" }, { Ref: "PrivateB" }],
  },
});
const natGatewayStack: CfnTemplate = {
  Resources: {
    PublicA: subnet(true),
    PrivateA: subnet(false),
    PrivateB: subnet(false),
    Eip: { Type: "AWS::EC2::EIP", Properties: { Domain: "vpc" } },
    Nat: { Type: "AWS::EC2::NatGateway", Properties: { SubnetId: { Ref: "PublicA" } } },
    Sqs: endpoint("sqs"),
    Secrets: endpoint("secretsmanager"),
    Dynamo: {
      Type: "AWS::EC2::VPCEndpoint",
      Properties: { VpcEndpointType: "Gateway", ServiceName: "dynamodb" },
    },
    Alarm: {
      Type: "AWS::CloudWatch::Alarm",
      Properties: { Namespace: "AWS/SQS", MetricName: "ApproximateAgeOfOldestMessage", Period: 60 },
    },
  },
};

const byItem = (template: CfnTemplate) =>
  Object.fromEntries(fixedResources(template).map((l) => [l.item, Number(l.usd.toFixed(6))]));

describe("fixed cost from a template", () => {
  it("prices a NAT gateway, its address, two interface endpoints over 2 AZs and an alarm", () => {
    expect(byItem(natGatewayStack)).toEqual({
      "NAT gateways": 32.85, // 730 h × $0.045
      "public IPv4 addresses": 3.65, // 730 h × $0.005
      "interface endpoint (sqs)": 14.6, // 2 AZs × 730 h × $0.01
      "interface endpoint (secretsmanager)": 14.6,
      "alarm metrics": 0.1,
    });
    const total = fixedResources(natGatewayStack).reduce((sum, l) => sum + l.usd, 0);
    expect(total).toBeCloseTo(65.8, 9);
  });

  it("prices a NAT instance by its type, with its root volume and auto-assigned address", () => {
    const template: CfnTemplate = {
      Resources: {
        PublicA: subnet(true),
        Nat: {
          Type: "AWS::EC2::Instance",
          Properties: { InstanceType: "t4g.nano", SubnetId: { Ref: "PublicA" } },
        },
        Cache: { Type: "AWS::ElastiCache::ServerlessCache", Properties: { Engine: "valkey" } },
        Fast: {
          Type: "AWS::CloudWatch::Alarm",
          Properties: { Namespace: "Hourglass", MetricName: "LatenessMs", Period: 10, Dimensions: [] },
        },
      },
    };
    expect(byItem(template)).toEqual({
      "EC2 instance (t4g.nano)": 3.066, // 730 h × $0.0042
      "EBS root volume (t4g.nano)": 0.64, // 8 GB × $0.08
      "public IPv4 addresses": 3.65,
      "serverless cache (valkey), data minimum": 6.132, // 0.1 GB × 730 h × $0.084
      "high-resolution alarm metrics": 0.3,
      "custom metrics read by alarms and dashboards": 0.3,
    });
  });

  it("refuses a resource it has no price for instead of leaving it out", () => {
    const template: CfnTemplate = {
      Resources: { Nat: { Type: "AWS::EC2::Instance", Properties: { InstanceType: "m7i.48xlarge" } } },
    };
    expect(() => fixedResources(template)).toThrow(UnpricedResourceError);
  });

  it("counts each custom metric once across alarms and dashboards, with the dashboard's shorthand", () => {
    const body = {
      "Fn::Join": [
        "",
        [
          '{"widgets":[{"properties":{"region":"',
          { Ref: "AWS::Region" },
          '","metrics":[["Hourglass","Succeeded","service","worker",{"stat":"Sum"}],[".","Retried",".","."],["AWS/SQS","NumberOfMessagesSent"]]}}]}',
        ],
      ],
    };
    const template: CfnTemplate = {
      Resources: {
        Board: { Type: "AWS::CloudWatch::Dashboard", Properties: { DashboardBody: body } },
        Alarm: {
          Type: "AWS::CloudWatch::Alarm",
          Properties: {
            Namespace: "Hourglass",
            MetricName: "Succeeded",
            Dimensions: [{ Name: "service", Value: "worker" }],
            Period: 60,
          },
        },
      },
    };
    expect(customMetrics(template)).toEqual([
      "Hourglass|Retried|service=worker",
      "Hourglass|Succeeded|service=worker",
    ]);
  });
});

describe("a whole bill", () => {
  const measurement: LambdaMeasurement = {
    measuredAt: "2026-12-05T00:00:00.000Z",
    profile: "lean",
    command: "hand-made",
    runs: [
      {
        jobsPerSecond: 1,
        jobs: 100,
        minutes: 1,
        api: { invocationsPerJob: 1, msPerInvocation: 100, meanMs: 100, failed: 0, jobsPerRequest: 1 },
        worker: { invocationsPerJob: 1, msPerInvocation: 200, meanMs: 200, failed: 0 },
        dispatcher: { invocations: 2, msPerInvocation: 1000, meanMs: 1000, failed: 0 },
        loadAverage: 1,
      },
    ],
  };
  const fn = () => ({
    Type: "AWS::Lambda::Function",
    Properties: {
      MemorySize: 1024,
      Architectures: ["arm64"],
      Environment: { Variables: { HOURGLASS_MODE: "aws" } },
    },
  });
  const template: CfnTemplate = {
    Resources: {
      Api: fn(),
      Dispatcher: fn(),
      Worker: fn(),
      Http: { Type: "AWS::ApiGatewayV2::Api", Properties: { ProtocolType: "HTTP" } },
      Source: { Type: "AWS::Lambda::EventSourceMapping", Properties: { FunctionName: { Ref: "Worker" } } },
      Tick: {
        Type: "AWS::Scheduler::Schedule",
        Properties: {
          ScheduleExpression: "rate(1 minute)",
          Target: { Arn: { "Fn::GetAtt": ["Dispatcher", "Arn"] } },
        },
      },
    },
  };

  it("adds the measured requests per job to the template's fixed cost", () => {
    const jobs = 1e6;
    const result = bill(template, measurement, "single", jobs);
    const usd = (item: string) => result.variable.find((l) => l.item === item)?.usd;
    expect(usd("DynamoDB writes")).toBeCloseTo(5 * 0.625, 9);
    expect(usd("DynamoDB reads")).toBeCloseTo(0.125, 9);
    // 0.1 sends + a receive and a delete per invocation, at 1 invocation a job: 2.1 × $0.40.
    expect(usd("SQS requests")).toBeCloseTo(2.1 * 0.4, 9);
    // 1M invocations × ($0.20 per million + 0.2 s × 1 GB × $0.0000133334).
    expect(usd("worker Lambda")).toBeCloseTo(0.2 + 200_000 * 0.0000133334, 6);
    expect(usd("API Gateway (HTTP API)")).toBeCloseTo(1, 9);
    // No bus in this template: no notifications.
    expect(usd("EventBridge notifications")).toBeUndefined();
    const dispatcher = result.fixed.find((l) => l.item === "dispatcher Lambda")?.usd;
    // 43,800 ticks × ($0.20 per million + 1 s × 1 GB × $0.0000133334).
    expect(dispatcher).toBeCloseTo(43_800 * (0.2e-6 + 0.0000133334), 6);
    expect(result.totalUsd).toBeCloseTo(result.fixedUsd + result.variableUsd, 9);
  });

  it("prices the alternatives as the issue recomputed them", () => {
    expect(qstashUsd(10e6)).toBeCloseTo(100, 9);
    expect(schedulerUsd(1e6)).toBeCloseTo(0.7, 3);
    expect(schedulerUsd(100e6)).toBeCloseTo(156, 2);
  });
});
