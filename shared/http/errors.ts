import type { FieldIssue } from "../errors.ts";

/** A field is larger than anything behind the API can store. Answered 413; nothing was changed. */
export class PayloadTooLargeError extends Error {
  constructor(readonly issues: readonly FieldIssue[]) {
    super(issues.map((i) => `${i.path}: ${i.message}`).join("; "));
    this.name = "PayloadTooLargeError";
  }
}
