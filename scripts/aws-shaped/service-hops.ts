import { PolicyEvaluator } from "./aws-gateway/policy-evaluator.ts";
import { IamDeniedError } from "./errors.ts";
import { globMatches } from "./iam-report.ts";
import { type ResolveContext, resolve, resolveString } from "./intrinsics.ts";
import type { StackTemplate } from "./template.ts";

/**
 * The two calls AWS makes into the functions, authorized as AWS authorizes them, before anything
 * runs: EventBridge Scheduler invokes the dispatcher with the schedule's role (its identity policy
 * must allow `lambda:InvokeFunction` on the target), and API Gateway invokes the API function under
 * an `AWS::Lambda::Permission` whose `SourceArn` must cover the route called (sampled here for the
 * events route and the root). Returns what was checked; throws IamDeniedError naming what AWS would
 * refuse.
 */
export async function checkServiceHops(template: StackTemplate, context: ResolveContext): Promise<string[]> {
  const { region, accountId } = context;
  const checked: string[] = [];
  const denied: string[] = [];
  const arnOf = (logicalId: string) =>
    resolveString({ "Fn::GetAtt": [logicalId, "Arn"] }, context, logicalId);

  const evaluator = new PolicyEvaluator(region, accountId);
  for (const schedule of template.schedules) {
    const roleId = (schedule.targetRoleArn as { "Fn::GetAtt"?: string[] } | undefined)?.["Fn::GetAtt"]?.[0];
    const target = arnOf(schedule.targetFunctionLogicalId);
    const what = `scheduler ${schedule.logicalId}: lambda:InvokeFunction ${target}`;
    if (!roleId) {
      denied.push(`${what} (the schedule names no role of this template)`);
      continue;
    }
    const principal = {
      name: "scheduler",
      arn: arnOf(roleId),
      policies: (template.rolePolicies.get(roleId) ?? []).map((policy) => ({
        name: policy.name,
        document: resolve(policy.document, context, policy.name) as { Statement: unknown[] },
      })),
    };
    const evaluation = await evaluator.evaluate(principal, {
      action: "lambda:InvokeFunction",
      resource: target,
    });
    if (evaluation.kind === "decided" && evaluation.decision === "Allowed") checked.push(what);
    else denied.push(what);
  }

  const api = template.functions.find((fn) => fn.role === "api");
  if (api) {
    const functionArn = arnOf(api.logicalId);
    const apiId = resolveString({ Ref: template.api.logicalId }, context, template.api.logicalId);
    const stage = template.api.api === "rest" ? template.api.stage : "$default";
    const permissions = Object.entries(template.resources)
      .filter(([, r]) => r.Type === "AWS::Lambda::Permission")
      .map(([id, r]) => ({
        function: resolveString(r.Properties?.FunctionName, context, `${id}.FunctionName`),
        principal: String(r.Properties?.Principal ?? ""),
        action: String(r.Properties?.Action ?? ""),
        sourceArn:
          r.Properties?.SourceArn === undefined ? "*" : resolveString(r.Properties.SourceArn, context, id),
      }));
    for (const path of ["/v1/events", "/"]) {
      const source = `arn:aws:execute-api:${region}:${accountId}:${apiId}/${stage}/GET${path}`;
      const what = `apigateway.amazonaws.com: lambda:InvokeFunction ${functionArn} from ${source}`;
      const allowed = permissions.some(
        (p) =>
          p.principal === "apigateway.amazonaws.com" &&
          globMatches(p.action, "lambda:InvokeFunction", true) &&
          (p.function === functionArn || functionArn.endsWith(`:function:${p.function}`)) &&
          globMatches(p.sourceArn, source, false),
      );
      (allowed ? checked : denied).push(what);
    }
  }
  if (denied.length > 0) throw new IamDeniedError(denied);
  return checked;
}
