import { type FieldIssue, ValidationError } from "../errors.ts";

export class LedgerValidationError extends ValidationError {
  constructor(issues: readonly FieldIssue[]) {
    super(issues);
    this.name = "LedgerValidationError";
  }
}

export interface Shortage {
  readonly sku: string;
  readonly requested: number;
  readonly available: number;
}

/** The hold asked for more than is available; nothing was held. Names every short SKU. */
export class InsufficientStockError extends Error {
  constructor(readonly shortages: readonly Shortage[]) {
    super(
      `not enough stock: ${shortages.map((s) => `${s.sku} (${s.requested} asked, ${s.available} available)`).join(", ")}`,
    );
    this.name = "InsufficientStockError";
  }
}

export class ReservationNotFoundError extends Error {
  constructor(readonly id: string) {
    super(`reservation ${id} does not exist`);
    this.name = "ReservationNotFoundError";
  }
}

/** The reservation is not in a state that allows the operation (confirm after expiry, …). */
export class ReservationStateError extends Error {
  constructor(
    readonly id: string,
    readonly status: string,
    readonly operation: string,
  ) {
    super(`cannot ${operation} reservation ${id}: it is ${status}`);
    this.name = "ReservationStateError";
  }
}

/** The same reservation id was used before for other items or another hold time. */
export class ReservationConflictError extends Error {
  constructor(readonly id: string) {
    super(`reservation ${id} already exists with other items or another holdSeconds`);
    this.name = "ReservationConflictError";
  }
}
