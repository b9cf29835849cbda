/** The template holds something the bill has no price for: add it to scripts/cost/prices.ts. */
export class UnpricedResourceError extends Error {
  constructor(
    readonly resourceType: string,
    readonly detail: string,
  ) {
    super(`no price for ${resourceType} ${detail}: add it to scripts/cost/prices.ts`);
    this.name = "UnpricedResourceError";
  }
}

/** A measurement the bill needs is missing or does not fit the template. */
export class MeasurementError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "MeasurementError";
  }
}
