import { isWildcardOnlyAction, runSimulation } from "@cloud-copilot/iam-simulate";
import type { Authorization } from "./authorizations.ts";
import { PolicyEvaluationError } from "./errors.ts";
import type { Decision, GatewayPrincipal } from "./types.ts";

/** IAM's answer for one authorization, with the resource as IAM saw it. */
export type Evaluation =
  | { readonly kind: "decided"; readonly decision: Decision; readonly resource: string }
  /** The simulator knows no such action: the operation does not exist in that service. */
  | { readonly kind: "unknown-action" };

/**
 * Evaluates authorizations against a principal's identity policies with @cloud-copilot/iam-simulate.
 * Policies are fixed for the gateway's life, so each (principal, action, resource, context) is
 * simulated once and remembered: a worker's thousands of calls a second cost a map lookup each.
 */
export class PolicyEvaluator {
  private readonly decisions = new WeakMap<GatewayPrincipal, Map<string, Promise<Evaluation>>>();
  private readonly wildcardOnly = new Map<string, Promise<boolean>>();

  constructor(
    private readonly region: string,
    private readonly accountId: string,
  ) {}

  evaluate(principal: GatewayPrincipal, authorization: Authorization): Promise<Evaluation> {
    let known = this.decisions.get(principal);
    if (!known) {
      known = new Map();
      this.decisions.set(principal, known);
    }
    const { action, resource, context } = authorization;
    const key = `${action}\n${resource}\n${context ? JSON.stringify(context) : ""}`;
    let evaluation = known.get(key);
    if (!evaluation) {
      evaluation = this.simulate(principal, authorization);
      known.set(key, evaluation);
    }
    return evaluation;
  }

  private async simulate(principal: GatewayPrincipal, authorization: Authorization): Promise<Evaluation> {
    const [service = "", actionName = ""] = authorization.action.split(":");
    // Actions that name no resource type (ListTables, PutMetricData) are authorized on "*" alone.
    const resource = (await this.isWildcardOnly(service, actionName)) ? "*" : authorization.resource;
    const result = await runSimulation(
      {
        request: {
          principal: principal.arn,
          action: authorization.action,
          resource: { resource, accountId: this.accountId },
          // What AWS would know of every call a Lambda function makes: over TLS, in this region,
          // by this role. Conditions on these keys then evaluate as they would there.
          contextVariables: {
            "aws:SecureTransport": "true",
            "aws:RequestedRegion": this.region,
            "aws:PrincipalArn": principal.arn,
            "aws:PrincipalAccount": this.accountId,
            ...authorization.context,
          },
        },
        identityPolicies: principal.policies.map((policy) => ({
          name: policy.name,
          policy: policy.document,
        })),
        serviceControlPolicies: [],
        resourceControlPolicies: [],
      },
      {},
    );
    if (result.resultType === "error") {
      const message = result.errors.message;
      if (message === "invalid.action" || message === "invalid.service") return { kind: "unknown-action" };
      throw new PolicyEvaluationError(
        principal.name,
        authorization.action,
        resource,
        JSON.stringify(result.errors),
      );
    }
    return { kind: "decided", decision: result.overallResult, resource };
  }

  private isWildcardOnly(service: string, action: string): Promise<boolean> {
    const key = `${service}:${action}`;
    let answer = this.wildcardOnly.get(key);
    if (!answer) {
      // An action the simulator does not know is not wildcard-only; the simulation then says so.
      answer = isWildcardOnlyAction(service, action).catch(() => false);
      this.wildcardOnly.set(key, answer);
    }
    return answer;
  }
}
