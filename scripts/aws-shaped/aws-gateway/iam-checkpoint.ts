import { type Authorization, authorizationsFor, type ResourceNaming } from "./authorizations.ts";
import { PolicyEvaluationError } from "./errors.ts";
import type { Evaluation, PolicyEvaluator } from "./policy-evaluator.ts";
import type { ServiceCall } from "./service-call.ts";
import type { GatewayPrincipal, PublishedEntry, RecordedCall } from "./types.ts";

/**
 * The IAM checkpoint every call passes: its authorizations evaluated against the caller's role and
 * written to the call log, which the harness reads afterwards to see what each function asked for.
 */

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
  if (evaluations.some((evaluation) => evaluation.kind === "unknown-action")) return { kind: "unknown" };
  const at = Date.now();
  let refused: Refusal | undefined;
  for (const [i, evaluation] of evaluations.entries()) {
    const authorization = authorizations[i];
    if (evaluation.kind !== "decided" || !authorization) continue;
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

/**
 * Every authorization the gateway decided, the ones IAM refused, and every EventBridge entry
 * accepted. Append-only arrays handed out as they are, so recording and reading cost the same
 * whether a run made ten calls or ten million.
 */
export class CallLog {
  private readonly all: RecordedCall[] = [];
  private readonly refused: RecordedCall[] = [];
  private readonly entries: PublishedEntry[] = [];

  record(call: RecordedCall): void {
    this.all.push(call);
    if (call.decision !== "Allowed") this.refused.push(call);
  }

  publish(entry: PublishedEntry): void {
    this.entries.push(entry);
  }

  calls(): readonly RecordedCall[] {
    return this.all;
  }

  denied(): readonly RecordedCall[] {
    return this.refused;
  }

  published(): readonly PublishedEntry[] {
    return this.entries;
  }
}
