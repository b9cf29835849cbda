import { describe, expect, it } from "vitest";
import { IamDeniedError } from "../../scripts/aws-shaped/errors.ts";
import type { Binding, ResolveContext } from "../../scripts/aws-shaped/intrinsics.ts";
import { checkServiceHops } from "../../scripts/aws-shaped/service-hops.ts";
import type { StackTemplate, TemplateResource } from "../../scripts/aws-shaped/template.ts";

/** The calls AWS makes into the functions are refused at start as AWS would refuse them. */
const ACCOUNT = "000000000000";
const REGION = "us-east-1";
const FN = `arn:aws:lambda:${REGION}:${ACCOUNT}:function:Api`;
const DISPATCHER = `arn:aws:lambda:${REGION}:${ACCOUNT}:function:Dispatcher`;

const bindings = new Map<string, Binding>([
  ["Api", { ref: "Api", attributes: { Arn: FN } }],
  ["Dispatcher", { ref: "Dispatcher", attributes: { Arn: DISPATCHER } }],
  [
    "SchedulerRole",
    { ref: "SchedulerRole", attributes: { Arn: `arn:aws:iam::${ACCOUNT}:role/SchedulerRole` } },
  ],
  ["RestApi", { ref: "abc123", attributes: {} }],
]);
const context: ResolveContext = { region: REGION, accountId: ACCOUNT, stackName: "Test", bindings };

function template(invokes: string, sourceArn: string): StackTemplate {
  const permission: TemplateResource = {
    Type: "AWS::Lambda::Permission",
    Properties: {
      Action: "lambda:InvokeFunction",
      FunctionName: { "Fn::GetAtt": ["Api", "Arn"] },
      Principal: "apigateway.amazonaws.com",
      SourceArn: sourceArn,
    },
  };
  return {
    name: "Test",
    cdkOut: "",
    resources: { Permission: permission },
    outputs: {},
    functions: [{ logicalId: "Api", role: "api" } as StackTemplate["functions"][number]],
    queues: [],
    eventSources: [],
    schedules: [
      {
        logicalId: "Schedule",
        expression: "rate(1 minute)",
        group: "default",
        state: "ENABLED",
        targetFunctionLogicalId: "Dispatcher",
        targetRoleArn: { "Fn::GetAtt": ["SchedulerRole", "Arn"] },
        retry: { maximumRetryAttempts: 2, maximumEventAgeSeconds: 60 },
      },
    ],
    api: { api: "rest", logicalId: "RestApi", stage: "api", apiKeys: false },
    cache: undefined,
    rolePolicies: new Map([
      [
        "SchedulerRole",
        [
          {
            name: "p",
            document: {
              Version: "2012-10-17",
              Statement: [{ Effect: "Allow", Action: "lambda:InvokeFunction", Resource: invokes }],
            },
          },
        ],
      ],
    ]),
  };
}

describe("the hops into the functions", () => {
  it("pass when the Scheduler's role may invoke the dispatcher and the permission covers the API's routes", async () => {
    const checked = await checkServiceHops(
      template(DISPATCHER, `arn:aws:execute-api:${REGION}:${ACCOUNT}:abc123/*/*/*`),
      context,
    );
    expect(checked).toHaveLength(3);
  });

  it("refuse a Scheduler role that may invoke another function", async () => {
    const error = await checkServiceHops(
      template(FN, `arn:aws:execute-api:${REGION}:${ACCOUNT}:abc123/*/*/*`),
      context,
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IamDeniedError);
    expect((error as IamDeniedError).denied).toEqual([
      `scheduler Schedule: lambda:InvokeFunction ${DISPATCHER}`,
    ]);
  });

  it("refuse a permission whose SourceArn names another stage", async () => {
    const error = await checkServiceHops(
      template(DISPATCHER, `arn:aws:execute-api:${REGION}:${ACCOUNT}:abc123/prod/*/*`),
      context,
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IamDeniedError);
    expect((error as IamDeniedError).denied.length).toBe(2);
  });
});
