import { App, Stack, Validations } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import * as events from "aws-cdk-lib/aws-events";
import { AwsSolutionsChecks } from "cdk-nag";
import { describe, expect, it } from "vitest";
import { Hourglass, type HourglassProps } from "../../infra/construct/hourglass.ts";
import { HourglassPropsError } from "../../infra/construct/props.ts";
import { acknowledgeFindings } from "../../infra/nag.ts";
import { TRANSITIONS, type Transition } from "../../shared/notifications/model.ts";

const build = (props: (stack: Stack) => HourglassProps = () => ({})) => {
  const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
  const stack = new Stack(app, "Notify", { env: { account: "111111111111", region: "eu-west-1" } });
  const hourglass = new Hourglass(stack, "Hourglass", props(stack));
  acknowledgeFindings(hourglass);
  return { app, stack, hourglass, template: Template.fromStack(stack) };
};

const functionEnvironments = (template: Template) =>
  Object.values(template.findResources("AWS::Lambda::Function")).map(
    (f) => (f.Properties.Environment?.Variables ?? {}) as Record<string, unknown>,
  );

const putEventsStatements = (template: Template) =>
  Object.values(template.findResources("AWS::IAM::Policy")).flatMap((policy) =>
    (policy.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[])
      .filter((s) => [s.Action].flat().includes("events:PutEvents"))
      .map((s) => ({ roles: policy.Properties.Roles as unknown[], resource: s.Resource })),
  );

// Synthesis is slow on a shared machine: each test builds one app, with room to spare.
const SLOW = 180_000;

describe("notifications on AWS (EventBridge)", () => {
  it(
    "publishes nothing by default: no bus, no PutEvents grant, no endpoint, notifications off in the functions",
    () => {
      const { hourglass, template } = build();
      expect(hourglass.eventBus).toBeUndefined();
      template.resourceCountIs("AWS::Events::EventBus", 0);
      expect(putEventsStatements(template)).toHaveLength(0);
      const environments = functionEnvironments(template);
      expect(environments).toHaveLength(3);
      for (const env of environments) {
        expect(env.HOURGLASS_NOTIFICATIONS).toBe("false");
        expect(env.HOURGLASS_EVENT_BUS_NAME).toBeUndefined();
      }
      const endpoints = JSON.stringify(template.findResources("AWS::EC2::VPCEndpoint"));
      expect(endpoints).not.toMatch(/events/);
    },
    SLOW,
  );

  it(
    "creates a bus for the transitions named, names both to the three functions, and lets only them put events on it",
    () => {
      const { template } = build(() => ({ notifications: { transitions: ["dead", "retrying", "dead"] } }));
      template.resourceCountIs("AWS::Events::EventBus", 1);
      const environments = functionEnvironments(template);
      expect(environments).toHaveLength(3);
      for (const env of environments) {
        expect(JSON.stringify(env.HOURGLASS_EVENT_BUS_NAME)).toMatch(/^\{"Ref":"HourglassEventBus/);
        expect(env.HOURGLASS_EVENT_BUS_TRANSITIONS).toBe("dead,retrying");
        expect(env.HOURGLASS_NOTIFICATIONS).toBeUndefined();
        // API Gateway cannot stream: the Redis stream is not written on AWS.
        expect(env.HOURGLASS_NOTIFY_STREAM).toBe("false");
      }
      const statements = putEventsStatements(template);
      expect(statements).toHaveLength(3);
      for (const statement of statements) {
        // On the bus itself, never on "*".
        expect(JSON.stringify(statement.resource)).toMatch(/HourglassEventBus/);
      }
      const roles = statements.flatMap((s) => s.roles.map((r) => JSON.stringify(r))).sort();
      expect(roles.map((r) => r.match(/Hourglass(Api|Dispatcher|Worker)Function/)?.[1])).toEqual([
        "Api",
        "Dispatcher",
        "Worker",
      ]);
      // Reachable without a NAT too.
      template.hasResourceProperties("AWS::EC2::VPCEndpoint", {
        ServiceName: Match.stringLikeRegexp("events"),
        VpcEndpointType: "Interface",
      });
    },
    SLOW,
  );

  it(
    "publishes to a bus it is given instead of creating one",
    () => {
      const { template } = build((stack) => ({
        notifications: {
          transitions: ["succeeded"],
          eventBus: events.EventBus.fromEventBusName(stack, "Shared", "shared-bus"),
        },
      }));
      template.resourceCountIs("AWS::Events::EventBus", 0);
      for (const env of functionEnvironments(template))
        expect(env.HOURGLASS_EVENT_BUS_NAME).toBe("shared-bus");
      expect(putEventsStatements(template)).toHaveLength(3);
    },
    SLOW,
  );

  it(
    "refuses a bus with no transitions to put on it, and transitions that do not exist",
    () => {
      expect(() =>
        build((stack) => ({
          notifications: { eventBus: events.EventBus.fromEventBusName(stack, "B", "b") },
        })),
      ).toThrow(HourglassPropsError);
      expect(() =>
        build(() => ({ notifications: { transitions: ["finished" as unknown as Transition] } })),
      ).toThrow(/unknown finished/);
    },
    SLOW,
  );

  it(
    "passes cdk-nag with the bus",
    () => {
      const { app } = build(() => ({ notifications: { transitions: [...TRANSITIONS] } }));
      Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
      expect(() => app.synth()).not.toThrow();
    },
    SLOW,
  );
});
