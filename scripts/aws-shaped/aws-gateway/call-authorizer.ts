import { type Authorization, authorizationsFor, type ResourceNaming } from "./authorizations.ts";
import type { CallLog } from "./call-log.ts";
import { PolicyEvaluationError } from "./errors.ts";
import type { Evaluation, PolicyEvaluator } from "./policy-evaluator.ts";
import type { ServiceCall } from "./service-call.ts";
import type { GatewayPrincipal } from "./types.ts";

export interface Refusal {
  readonly authorization: Authorization;
  readonly decision: "ImplicitlyDenied" | "ExplicitlyDenied";
}

export type Verdict =
  /** IAM decided every authorization; `refused` is the first it did not allow, if any. */
  | { readonly kind: "decided"; readonly refused?: Refusal }
  /** IAM knows no such action: the operation does not exist. */
  | { readonly kind: "unknown" }
  | { readonly kind: "failed"; readonly error: PolicyEvaluationError };

/**
 * Decides a call: every authorization it needs is evaluated and recorded, allowed or not, so the
 * record shows all a function asked for even when enforcement is off.
 */
export async function decide(
  call: ServiceCall,
  principal: GatewayPrincipal,
  naming: ResourceNaming,
  evaluator: PolicyEvaluator,
  log: CallLog,
): Promise<Verdict> {
  const authorizations = authorizationsFor(call, naming);
  let evaluations: Evaluation[];
  try {
    evaluations = await Promise.all(authorizations.map((a) => evaluator.evaluate(principal, a)));
  } catch (error) {
    if (error instanceof PolicyEvaluationError) return { kind: "failed", error };
    throw error;
  }
  const at = Date.now();
  let refused: Refusal | undefined;
  for (const [i, evaluation] of evaluations.entries()) {
    const authorization = authorizations[i];
    if (evaluation.kind === "unknown-action") return { kind: "unknown" };
    if (!authorization) continue;
    log.record({
      at,
      principal: principal.name,
      service: call.service,
      action: authorization.action,
      resource: evaluation.resource,
      operation: call.operation,
      decision: evaluation.decision,
    });
    if (!refused && evaluation.decision !== "Allowed") {
      refused = {
        authorization: { ...authorization, resource: evaluation.resource },
        decision: evaluation.decision,
      };
    }
  }
  return refused ? { kind: "decided", refused } : { kind: "decided" };
}
