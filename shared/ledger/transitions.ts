import { and, equals, greaterThan } from "../dynamo/conditions.ts";
import { update } from "../dynamo/expression.ts";
import { transactionRefusals } from "../dynamo/failures.ts";
import type { TransactItems } from "../dynamo/transact.ts";
import type { LedgerWrites } from "./commit.ts";
import { ReservationStateError } from "./errors.ts";
import { GroupCommit } from "./group-commit.ts";
import type { CounterChanges, SkuWrite } from "./items.ts";
import { reservationKey } from "./keys.ts";
import type { Reservation, ReservationStatus } from "./model.ts";

/** How a held reservation moves on (confirm, cancel, expire), and what each of its items writes. */
export interface Transition {
  readonly to: ReservationStatus;
  /** For the error: "confirm", "cancel" or "expire". */
  readonly operation: string;
  readonly now: number;
  /** Confirm only while the hold has not expired; a release may come after. */
  readonly requireUnexpired: boolean;
  readonly perItem: (sku: string, quantity: number) => SkuWrite;
}

interface Move {
  readonly tenant: string;
  readonly reservation: Reservation;
  readonly transition: Transition;
}

/**
 * A DynamoDB transaction carries 100 actions: the SKU's counter, then a reservation update and a
 * ledger entry per move.
 */
const MAX_GROUP = 49;

/**
 * Moves held reservations out of `held` (confirm, cancel, expire), each in a transaction with its
 * SKUs' counters and ledger entries. Moves of one SKU that arrive together are written as one
 * transaction (group commit), as holds are: when a flash sale's holds expire within a second of
 * each other, their releases would otherwise be as many transactions on one counter item, each
 * refused and sent again for every one that committed before it (reliability.md, issue 33
 * finding 7). A reservation of several SKUs is written alone.
 */
export class ReservationTransitions {
  private readonly groups = new GroupCommit(MAX_GROUP, (group: Move[]) => this.writeGroup(group));

  constructor(
    private readonly table: string,
    private readonly writes: LedgerWrites,
    /** The reservation as it stands now, to name the state that refused a move. */
    private readonly current: (tenant: string, id: string) => Promise<Reservation>,
  ) {}

  /**
   * Moves `reservation` as `transition` says, only if it is still held (and, for a confirm,
   * unexpired): otherwise throws ReservationStateError with the state it is in.
   */
  apply(tenant: string, reservation: Reservation, transition: Transition): Promise<void> {
    const only = reservation.items.length === 1 ? reservation.items[0] : undefined;
    if (!only) return this.alone({ tenant, reservation, transition });
    return this.groups.submit(`${tenant}\n${only.sku}`, { tenant, reservation, transition });
  }

  /**
   * One SKU's moves in one transaction: the counter once, for the sum of their changes, and each
   * move's reservation update and entry. A move refused by its own reservation's condition (a
   * cancel racing the expiry, a confirm after expiry) gets its state error, and the others are
   * sent again without it; any other failure sends each move alone, whose own transaction says
   * what happened to it.
   */
  private async writeGroup(group: Move[]): Promise<PromiseSettledResult<void>[]> {
    const outcomes: PromiseSettledResult<void>[] = new Array(group.length);
    // One transaction cannot write an item twice: a second move of the same reservation (a
    // cancel and its expiry at once) waits for the first.
    const first = new Map<string, number>();
    let pending: number[] = [];
    const repeats: number[] = [];
    group.forEach((move, i) => {
      const id = move.reservation.id;
      if (first.has(id)) repeats.push(i);
      else {
        first.set(id, i);
        pending.push(i);
      }
    });
    while (pending.length > 1) {
      const moves = pending.map((i) => group[i]!);
      try {
        await this.commitGroup(moves);
      } catch (error) {
        const refusals = transactionRefusals(error);
        const refused = refusals ? pending.filter((_, n) => refusals[n] !== undefined) : [];
        if (refused.length === 0) break;
        await Promise.all(
          refused.map(async (i) => {
            outcomes[i] = await this.refusal(group[i]!).then(
              (reason): PromiseSettledResult<void> => ({ status: "rejected", reason }),
              (reason: unknown): PromiseSettledResult<void> => ({ status: "rejected", reason }),
            );
          }),
        );
        pending = pending.filter((i) => !refused.includes(i));
        continue;
      }
      for (const i of pending) outcomes[i] = { status: "fulfilled", value: undefined };
      pending = [];
    }
    const settle = async (indexes: number[]) => {
      const results = await Promise.allSettled(indexes.map((i) => this.alone(group[i]!)));
      indexes.forEach((i, n) => {
        outcomes[i] = results[n]!;
      });
    };
    await settle(pending);
    // A repeat whose first move committed finds the reservation in that move's state, which no
    // later move can change (every move conditions on `held`): refused without a round trip.
    // Otherwise it is tried alone, as it would have been first.
    const tryAlone: number[] = [];
    for (const i of repeats) {
      const { reservation, transition } = group[i]!;
      const earlier = group[first.get(reservation.id)!]!;
      if (outcomes[first.get(reservation.id)!]?.status === "fulfilled") {
        outcomes[i] = {
          status: "rejected",
          reason: new ReservationStateError(reservation.id, earlier.transition.to, transition.operation),
        };
      } else tryAlone.push(i);
    }
    await settle(tryAlone);
    return outcomes;
  }

  private async commitGroup(moves: readonly Move[]): Promise<void> {
    const { tenant } = moves[0]!;
    const parts = moves.map(({ reservation, transition }) => {
      const { sku, quantity } = reservation.items[0]!;
      return transition.perItem(sku, quantity);
    });
    const changes: Record<string, number> = {};
    for (const part of parts) {
      for (const [field, delta] of Object.entries(part.changes))
        changes[field] = (changes[field] ?? 0) + delta;
    }
    await this.writes.commit(
      tenant,
      moves.map((move) => this.reservationUpdate(move)),
      [{ sku: parts[0]!.sku, changes: changes as CounterChanges, entries: parts.flatMap((p) => p.entries) }],
    );
  }

  /** The move's own transaction: its reservation and each of its SKUs. */
  private async alone(move: Move): Promise<void> {
    const { tenant, reservation, transition } = move;
    try {
      await this.writes.commit(
        tenant,
        [this.reservationUpdate(move)],
        reservation.items.map(({ sku, quantity }) => transition.perItem(sku, quantity)),
      );
    } catch (error) {
      if (transactionRefusals(error)?.[0]) throw await this.refusal(move);
      throw error;
    }
  }

  /** The error for a move its reservation's condition refused: the state it is in now. */
  private async refusal({ tenant, reservation, transition }: Move): Promise<ReservationStateError> {
    const current = await this.current(tenant, reservation.id);
    const status =
      current.status === "held" && current.expiresAt <= transition.now ? "expired" : current.status;
    return new ReservationStateError(reservation.id, status, transition.operation);
  }

  private reservationUpdate({ tenant, reservation, transition }: Move): TransactItems[number] {
    const { to, now, requireUnexpired } = transition;
    return {
      Update: {
        TableName: this.table,
        Key: { pk: reservationKey(tenant, reservation.id), sk: "reservation" },
        ...update({
          set: { status: to, updatedAt: now },
          if: requireUnexpired
            ? and(equals("status", "held"), greaterThan("expiresAt", now))
            : equals("status", "held"),
        }),
      },
    };
  }
}
