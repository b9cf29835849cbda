import { createHash } from "node:crypto";
import type { Callbacks } from "../model/event.ts";

export type FinalOutcome = "succeeded" | "dead";

/** What a callback receiver gets in the (signed) body. */
export interface CallbackBody {
  readonly kind: "hourglass.callback";
  readonly outcome: FinalOutcome;
  readonly event: {
    readonly id: string;
    readonly type: string;
    readonly attempt: number;
    readonly error?: string;
    readonly finishedAt: string;
  };
}

export interface FinishedEvent {
  readonly tenant: string;
  readonly id: string;
  readonly type: string;
  readonly attempt: number;
  readonly error?: string | undefined;
  /** When the outcome was recorded (the journal's update time). */
  readonly finishedAt: number;
}

/**
 * The `webhook` event that calls an event's callback for its outcome, or undefined when it has
 * none. Its id is derived from the event, the outcome and the time it was recorded: scheduling it
 * twice (a retried call) makes one event, and a replayed event that finishes again gets a new one.
 * Ids of this form cannot come from a schedule (no `@`), only from a client that guesses the hash,
 * and then only within its own tenant.
 */
export function callbackEventFor(
  callbacks: Callbacks | undefined,
  outcome: FinalOutcome,
  finished: FinishedEvent,
): { id: string; type: "webhook"; delaySeconds: 0; payload: unknown } | undefined {
  const url = outcome === "succeeded" ? callbacks?.onSuccess : callbacks?.onFailure;
  if (!url) return undefined;
  const digest = createHash("sha256")
    .update(`${finished.tenant}/${finished.id}\n${outcome}\n${finished.finishedAt}`)
    .digest("base64url")
    .replace(/[^A-Za-z0-9]/g, "")
    .slice(0, 32);
  const body: CallbackBody = {
    kind: "hourglass.callback",
    outcome,
    event: {
      id: finished.id,
      type: finished.type,
      attempt: finished.attempt,
      ...(finished.error !== undefined && { error: finished.error }),
      finishedAt: new Date(finished.finishedAt).toISOString(),
    },
  };
  return {
    id: `callback.${outcome === "succeeded" ? "success" : "failure"}.${digest}`,
    type: "webhook",
    delaySeconds: 0,
    payload: { url, method: "POST", body },
  };
}
