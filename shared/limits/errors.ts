import { ValidationError } from "../errors.ts";
import type { StoredLimits } from "./model.ts";

/** A limits write carried an `If-Match` that is not the current version: nothing was changed. */
export class LimitsVersionMismatchError extends Error {
  constructor(
    readonly type: string,
    readonly expected: number,
    readonly current: StoredLimits,
  ) {
    super(`limits of ${type} are at version ${current.version}, not ${expected}`);
    this.name = "LimitsVersionMismatchError";
  }
}

/** The tenant made more creates than its cap allows: retry after `retryAfterMs`. */
export class TenantRateLimitedError extends Error {
  constructor(
    readonly tenant: string,
    readonly retryAfterMs: number,
    readonly perSecond: number,
  ) {
    super(`more than ${perSecond} events created per second; retry in ${Math.ceil(retryAfterMs / 1000)} s`);
    this.name = "TenantRateLimitedError";
  }
}

/** The tenant already has limits on as many types as the deployment allows: nothing was changed. */
export class TooManyLimitedTypesError extends ValidationError {
  constructor(
    readonly type: string,
    readonly max: number,
  ) {
    super([
      {
        path: "type",
        message: `a tenant may set limits on at most ${max} types (HOURGLASS_TENANT_LIMITED_TYPES); ${type} would be one more`,
      },
    ]);
    this.name = "TooManyLimitedTypesError";
  }
}
