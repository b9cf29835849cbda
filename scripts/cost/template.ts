import { App } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import type { Profile } from "../../infra/construct/hourglass.ts";
import { HourglassStack } from "../../infra/stacks/hourglass-stack.ts";

/** The parts of a CloudFormation template the bill reads. */
export interface CfnResource {
  readonly Type: string;
  readonly Properties?: Readonly<Record<string, unknown>>;
}
export interface CfnTemplate {
  readonly Resources: Readonly<Record<string, CfnResource>>;
}

/**
 * The stack `cdk deploy` would create for a profile, synthesized in this process (bundling
 * skipped: the bill reads resources, not code). us-east-1, as the prices are.
 */
export function synthesizeProfile(profile: Profile): CfnTemplate {
  const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
  const stack = new HourglassStack(app, "Hourglass", {
    env: { account: "111111111111", region: "us-east-1" },
    hourglass: { profile },
  });
  return Template.fromStack(stack).toJSON() as CfnTemplate;
}

export const resourcesOf = (template: CfnTemplate, type: string): CfnResource[] =>
  Object.values(template.Resources).filter((r) => r.Type === type);

export const prop = <T>(resource: CfnResource, name: string): T | undefined =>
  resource.Properties?.[name] as T | undefined;

/** A template value as text: intrinsic functions (Ref, GetAtt, Join) become a stable placeholder. */
export function text(value: unknown): string {
  if (typeof value === "string" || typeof value === "number") return String(value);
  if (value && typeof value === "object") {
    const join = (value as { "Fn::Join"?: [string, unknown[]] })["Fn::Join"];
    if (join) return join[1].map(text).join(join[0]);
    // No quotes in the placeholder: it may sit inside a JSON string (a dashboard's body).
    const v = value as { Ref?: string; "Fn::GetAtt"?: string[] };
    if (v.Ref) return `<Ref ${v.Ref}>`;
    if (v["Fn::GetAtt"]) return `<GetAtt ${v["Fn::GetAtt"].join(".")}>`;
    return `<${Object.keys(value).join(",")}>`;
  }
  return "";
}

/** The environment variables of the template's functions that run Hourglass. */
export function hourglassFunctions(template: CfnTemplate): {
  readonly resource: CfnResource;
  readonly env: Readonly<Record<string, unknown>>;
}[] {
  return resourcesOf(template, "AWS::Lambda::Function")
    .map((resource) => ({
      resource,
      env: (prop<{ Variables?: Record<string, unknown> }>(resource, "Environment")?.Variables ??
        {}) as Record<string, unknown>,
    }))
    .filter((f) => f.env.HOURGLASS_MODE === "aws");
}
