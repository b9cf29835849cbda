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

/**
 * One line for any thrown value, cut to `maxLength`: `Name: message` for an Error, `String(value)`
 * otherwise. Never throws itself: a handler may throw an object with no prototype (which `String`
 * refuses), one whose `toString` throws, or an Error whose `message` getter does. Such a value used
 * to make recording the failure throw, so the event was neither retried nor dead-lettered and ran
 * again at each redelivery.
 */
export function describeError(error: unknown, maxLength = 1_000): string {
  const text = textOf(error);
  return text.length > maxLength ? `${text.slice(0, maxLength - 3)}...` : text;
}

function textOf(error: unknown): string {
  try {
    if (error instanceof Error) return `${String(error.name)}: ${String(error.message)}`;
    return String(error);
  } catch {
    try {
      return `${Object.prototype.toString.call(error)} (not describable)`;
    } catch {
      return "(a thrown value that cannot be described)";
    }
  }
}
