import { ValidationError } from "../errors.ts";
import type { BatchItemResult } from "../events/intake.ts";
import { PayloadTooLargeError } from "./errors.ts";

/**
 * The largest event payload, as UTF-8 JSON. The journal keeps an event in one DynamoDB item, and
 * an item holds at most 400 KB: a larger payload failed there, as a 503, after validation passed.
 * 256 KiB leaves the rest of the item (ids, times, last error) well inside it.
 */
export const MAX_PAYLOAD_BYTES = 262_144;

/** A 413 for an event whose payload is over MAX_PAYLOAD_BYTES, or undefined. */
export function oversizedPayload(input: unknown, path: string): PayloadTooLargeError | undefined {
  if (input === null || typeof input !== "object" || !("payload" in input)) return undefined;
  // Bodies are bounded in depth before routes run (body.ts), so JSON.stringify cannot overflow.
  const json = JSON.stringify((input as { payload: unknown }).payload) ?? "null";
  // UTF-8 is at most 3 bytes per UTF-16 unit: most payloads are decided without encoding them.
  if (json.length * 3 <= MAX_PAYLOAD_BYTES) return undefined;
  const bytes = Buffer.byteLength(json, "utf8");
  if (bytes <= MAX_PAYLOAD_BYTES) return undefined;
  return new PayloadTooLargeError([
    { path, message: `${bytes} bytes as JSON; at most ${MAX_PAYLOAD_BYTES} bytes fit in an event` },
  ]);
}

/**
 * Schedules a batch whose oversized items are answered 413 on their own, the rest by the engine:
 * the engine sees only the rest, so its results (and the `events[i]` in its messages) are
 * renumbered back to the positions the client sent.
 */
export async function scheduleWithoutOversized(
  inputs: readonly unknown[],
  schedule: (inputs: readonly unknown[]) => Promise<BatchItemResult[]>,
): Promise<BatchItemResult[]> {
  const refused = inputs.map((input, index) => oversizedPayload(input, `events[${index}].payload`));
  if (refused.every((error) => error === undefined)) return schedule(inputs);
  const kept = inputs.flatMap((_, index) => (refused[index] ? [] : [index]));
  const results = await schedule(kept.map((index) => inputs[index]));
  const renumber = (text: string) =>
    text.replace(/events\[(\d+)\]/g, (whole, i: string) =>
      kept[Number(i)] === undefined ? whole : `events[${kept[Number(i)]}]`,
    );
  return inputs.map((_, index): BatchItemResult => {
    const error = refused[index];
    if (error) return { ok: false, index, error };
    const result = results[kept.indexOf(index)]!;
    if (result.ok) return result;
    const renumbered =
      result.error instanceof ValidationError
        ? new ValidationError(
            result.error.issues.map((issue) => ({
              path: renumber(issue.path),
              message: renumber(issue.message),
            })),
            result.error.kind,
          )
        : result.error;
    return { ok: false, index, error: renumbered };
  });
}
