import { InvalidCursorError } from "./errors.ts";

/**
 * Page cursors are DynamoDB's LastEvaluatedKey, base64url-encoded. They are opaque to clients; a
 * malformed one is rejected as bad input rather than passed to DynamoDB.
 */
export function encodeCursor(key: Record<string, unknown> | undefined): string | undefined {
  return key ? Buffer.from(JSON.stringify(key)).toString("base64url") : undefined;
}

export function decodeCursor(cursor: string | undefined): Record<string, unknown> | undefined {
  if (!cursor) return undefined;
  try {
    const value = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as unknown;
    if (typeof value !== "object" || value === null || Array.isArray(value))
      throw new InvalidCursorError(cursor);
    return value as Record<string, unknown>;
  } catch {
    throw new InvalidCursorError(cursor);
  }
}
