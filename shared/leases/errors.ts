import { type FieldIssue, ValidationError } from "../errors.ts";

/** Someone else holds the lease. Carries who, and until when, as the lease item said. */
export class LeaseHeldError extends Error {
  constructor(
    readonly leaseName: string,
    readonly holder: string,
    readonly expiresAt: number,
  ) {
    super(`lease ${leaseName} is held by ${holder} until ${new Date(expiresAt).toISOString()}`);
    this.name = "LeaseHeldError";
  }
}

/** The owner or token does not match the lease as it stands: it expired and was taken, or never was. */
export class StaleLeaseError extends Error {
  constructor(
    readonly leaseName: string,
    readonly owner: string,
    readonly token: number,
    readonly current: { holder: string | undefined; token: number } | undefined,
  ) {
    super(`lease ${leaseName}: owner ${owner} with token ${token} is not the current holder`);
    this.name = "StaleLeaseError";
  }
}

/** A lease call with arguments no lease can have (a ttl that is not a whole, positive number of ms, …). */
export class LeaseValidationError extends ValidationError {
  constructor(issues: readonly FieldIssue[]) {
    super(issues);
    this.name = "LeaseValidationError";
  }
}

/** The lease was lost while `fn` ran: a renewal failed or did not answer in time, so `fn` was told to stop. */
export class LeaseLostError extends Error {
  constructor(
    readonly leaseName: string,
    options?: { cause?: unknown },
  ) {
    super(`lease ${leaseName} was lost while its holder was working`, options);
    this.name = "LeaseLostError";
  }
}

/** No renewal was confirmed before the last confirmed expiry (minus the margin): the call may be hanging. */
export class RenewalTimeoutError extends Error {
  constructor(readonly leaseName: string) {
    super(`lease ${leaseName}: no renewal was confirmed before the lease would expire`);
    this.name = "RenewalTimeoutError";
  }
}
