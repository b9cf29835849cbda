import { HourglassApiError } from "../client/client.ts";
import type { Output } from "./output.ts";

/**
 * One rule for doing a thing twice, in every command that changes a state (cancel, reservation
 * confirm and cancel, schedules rm, lease release, dlq replay):
 *
 * - If the thing is already in a state that gives what the action asks for (the first call's
 *   result, or an equivalent one: an expired hold has given its stock back as a cancelled one
 *   has), the command succeeds (exit 0) and says "already <state>".
 * - If it is in a state that contradicts the action (confirming a cancelled hold, cancelling an
 *   event that ran), the command fails (exit 1) and names that state.
 *
 * Scripts can thus run a command again after a timeout or a crash without reading its error text.
 */

/** The action met a state that contradicts it: exit 1, with the state named. */
export class StateConflictError extends Error {
  constructor(
    readonly subject: string,
    readonly verb: string,
    readonly state: string,
  ) {
    super(`cannot ${verb} ${subject}: it is ${state}`);
    this.name = "StateConflictError";
  }
}

export interface Repeatable<T> {
  /** What the action is about, for messages: `event e1`, `reservation r1`. */
  readonly subject: string;
  /** The verb for "cannot … it": cancel, confirm, replay. */
  readonly verb: string;
  /** The states in which the action has nothing left to do. */
  readonly satisfied: readonly string[];
  /**
   * States the server answers with 200 and no change although they contradict the action (resuming
   * an ended schedule): refused here, named, before acting.
   */
  readonly contradicting?: readonly string[];
  /** The state before acting, for a server that answers a repeat with 200 (so "already" can be said). */
  readonly before?: () => Promise<string | undefined>;
  readonly act: () => Promise<T>;
  /** The thing as it stands, printed with --json when the action had nothing left to do. */
  readonly current: () => Promise<unknown>;
  readonly done: (result: T) => string;
}

/** Runs `spec.act` under the rule above and prints the outcome. */
export async function once<T>(out: Output, spec: Repeatable<T>): Promise<void> {
  const state = spec.before ? await spec.before() : undefined;
  if (state !== undefined && spec.satisfied.includes(state)) {
    out.print(await spec.current(), () => `${spec.subject}: already ${state}`);
    return;
  }
  if (state !== undefined && spec.contradicting?.includes(state)) {
    throw new StateConflictError(spec.subject, spec.verb, state);
  }
  let result: T;
  try {
    result = await spec.act();
  } catch (error) {
    const conflict = conflictState(error);
    if (conflict === undefined) throw error;
    if (!spec.satisfied.includes(conflict)) throw new StateConflictError(spec.subject, spec.verb, conflict);
    out.print(await spec.current(), () => `${spec.subject}: already ${conflict}`);
    return;
  }
  out.print(result, () => spec.done(result));
}

/** The current state a 409 "not allowed in the current state" names; undefined for any other error. */
export function conflictState(error: unknown): string | undefined {
  if (!(error instanceof HourglassApiError) || error.status !== 409) return undefined;
  const current = (error.problem as Record<string, unknown>).currentStatus;
  return typeof current === "string" ? current : undefined;
}

/** A 404 from the API. */
export function isNotFound(error: unknown): boolean {
  return error instanceof HourglassApiError && error.status === 404;
}
