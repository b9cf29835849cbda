/** Errors shared by every module; each module adds its own in its own `errors.ts`. */

export interface FieldIssue {
  /** JSON path of the offending field, such as `events[3].runAt`. */
  readonly path: string;
  readonly message: string;
}

/** Input refused before anything changed. 400 for malformed requests, 422 for rule breaks. */
export class ValidationError extends Error {
  constructor(
    readonly issues: readonly FieldIssue[],
    readonly kind: "malformed" | "unprocessable" = "unprocessable",
  ) {
    super(issues.map((i) => `${i.path || "(root)"}: ${i.message}`).join("; "));
    this.name = "ValidationError";
  }
}
