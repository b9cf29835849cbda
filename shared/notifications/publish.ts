import { parseMember } from "../engine/keys.ts";
import type { DispatchMessage } from "../model/message.ts";
import type { EventStatus } from "../model/status.ts";
import { type HeldBy, STATUS_AFTER, type Transition } from "./model.ts";
import type { Notifier } from "./notifier.ts";

/** What the transition points have: the engine's deps carry both. */
export interface NotifyDeps {
  readonly notifier?: Notifier | undefined;
  readonly clock: () => number;
}

export interface NoticeFields {
  readonly tenant: string;
  readonly id: string;
  /** Left out where the caller does not have it: looked up at flush time. */
  readonly type?: string | undefined;
  readonly attempt: number;
  readonly error?: string | undefined;
  readonly runAt?: number | undefined;
  readonly heldBy?: HeldBy | undefined;
  /** Defaults to the status the transition leads to (see STATUS_AFTER). */
  readonly status?: EventStatus | undefined;
}

/**
 * Hands one transition to the notifier: an append to a buffer, nothing more, so it can sit right
 * after the write that made the transition happen. Call it only when that write applied (a
 * conditional write that succeeded, a script that answered OK), which is what makes each
 * transition published once even when the request or message behind it is replayed.
 */
export function notify(deps: NotifyDeps, transition: Transition, fields: NoticeFields): void {
  const notifier = deps.notifier;
  if (!notifier?.enabled) return;
  try {
    // Built in one literal, absent fields as undefined: a notice is made for every transition of
    // every event, and conditional spreads cost several times as much (and more garbage).
    notifier.publish({
      transition,
      tenant: fields.tenant,
      id: fields.id,
      type: fields.type,
      attempt: fields.attempt,
      status: fields.status ?? STATUS_AFTER[transition],
      time: deps.clock(),
      error: fields.error,
      runAt: fields.runAt,
      heldBy: fields.heldBy,
    });
  } catch {
    // A notification never fails the event it describes.
  }
}

/** `dispatched` for each message about to be sent (the claim or direct dispatch applied). */
export function notifyDispatched(
  deps: NotifyDeps,
  messages: readonly DispatchMessage[],
  type?: string | undefined,
): void {
  if (!deps.notifier?.enabled) return;
  for (const message of messages) {
    const { tenant, id } = parseMember(message.member);
    notify(deps, "dispatched", { tenant, id, type, attempt: message.attempt, runAt: message.runAt });
  }
}
