import type { GatewayPrincipal, RecordedCall } from "./aws-gateway/index.ts";

export interface IamReport {
  /** Each distinct (principal, action, resource) a role did not allow. */
  readonly denied: readonly RecordedCall[];
  readonly text: string;
}

const key = (call: { principal: string; action: string; resource: string }) =>
  `${call.principal} ${call.action} ${call.resource}`;

/** Every distinct call each principal made, with IAM's answer; the denied ones first. */
export function iamReport(calls: readonly RecordedCall[]): IamReport {
  const distinct = new Map<string, { call: RecordedCall; count: number }>();
  for (const call of calls) {
    const entry = distinct.get(key(call));
    if (entry) entry.count++;
    else distinct.set(key(call), { call, count: 1 });
  }
  const rows = [...distinct.values()].sort((a, b) => key(a.call).localeCompare(key(b.call)));
  const denied = rows.filter((row) => row.call.decision !== "Allowed").map((row) => row.call);
  const lines = [
    `IAM: ${calls.length} AWS calls, ${rows.length} distinct, ${denied.length} denied by the template's roles`,
    ...rows.map(
      ({ call, count }) =>
        `  ${call.decision === "Allowed" ? "allowed" : "DENIED "} ${call.principal.padEnd(10)} ${call.action.padEnd(32)} ${call.resource} (×${count})`,
    ),
  ];
  return { denied, text: lines.join("\n") };
}

export interface Grant {
  readonly principal: string;
  readonly action: string;
  /** The resources of the statement that grants it. */
  readonly resources: readonly string[];
}

/**
 * What each role allows that no recorded call used: an action of an Allow statement that no allowed
 * call made on any of that statement's resources. (CDK writes one statement per grant, naming a
 * table and its indexes together; judging each action against each resource would report every
 * action on `/index/*` that only a Query can use.) Wildcards match as IAM's do (`*`, `?`,
 * case-insensitive actions).
 */
export function unusedGrants(
  principals: readonly GatewayPrincipal[],
  calls: readonly RecordedCall[],
): Grant[] {
  const unused: Grant[] = [];
  for (const principal of principals) {
    const made = calls.filter((call) => call.principal === principal.name && call.decision === "Allowed");
    for (const policy of principal.policies) {
      for (const statement of statementsOf(policy.document)) {
        if (statement.Effect !== "Allow") continue;
        const resources = list(statement.Resource);
        for (const action of list(statement.Action)) {
          const used = made.some(
            (call) =>
              globMatches(action, call.action, true) &&
              resources.some((resource) => globMatches(resource, call.resource, false)),
          );
          if (!used) unused.push({ principal: principal.name, action, resources });
        }
      }
    }
  }
  return unused;
}

function statementsOf(document: unknown): { Effect?: string; Action?: unknown; Resource?: unknown }[] {
  const statement = (document as { Statement?: unknown }).Statement;
  return (Array.isArray(statement) ? statement : [statement]).filter(Boolean) as {
    Effect?: string;
    Action?: unknown;
    Resource?: unknown;
  }[];
}

function list(value: unknown): string[] {
  return (Array.isArray(value) ? value : [value]).filter((item): item is string => typeof item === "string");
}

/** IAM's wildcards (`*`, `?`) in an action or an ARN. */
export function globMatches(pattern: string, value: string, ignoreCase: boolean): boolean {
  const escaped = pattern
    .replace(/[.+^${}()|[\]\\]/g, "\\$&")
    .replace(/\*/g, ".*")
    .replace(/\?/g, ".");
  return new RegExp(`^${escaped}$`, ignoreCase ? "i" : "").test(value);
}
