import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { createInterface } from "node:readline";
import { SingleBar } from "cli-progress";
import type { HourglassClient } from "../client/client.ts";
import type { ScheduleInput } from "../events/schema.ts";

export interface ImportSummary {
  created: number;
  existing: number;
  failed: { line: number; status: number; detail: string }[];
}

/**
 * Imports events from NDJSON through the batch route. A line without an id gets one derived from
 * its content, so running the same import twice creates nothing new the second time.
 */
export async function importEvents(
  client: HourglassClient,
  file: string,
  options: { batch: number; progress: boolean },
): Promise<ImportSummary> {
  const summary: ImportSummary = { created: 0, existing: 0, failed: [] };
  const bar = options.progress
    ? new SingleBar({
        format: "importing [{bar}] {percentage}% | {value}/{total} bytes | {lines} lines",
        stream: process.stderr,
        // Drawn even when stderr is not a terminal, when asked for with --progress.
        noTTYOutput: true,
        notTTYSchedule: 250,
      })
    : undefined;
  bar?.start((await stat(file)).size, 0, { lines: 0 });
  let bytes = 0;
  let batch: { line: number; event: ScheduleInput }[] = [];
  const flush = async () => {
    if (batch.length === 0) return;
    const response = await client.scheduleBatch(batch.map((b) => b.event));
    response.results.forEach((result, i) => {
      const line = batch[i]!.line;
      if (result.status === 201) summary.created++;
      else if (result.status === 200) summary.existing++;
      else
        summary.failed.push({
          line,
          status: result.status,
          detail: String(result.error?.detail ?? result.error?.title),
        });
    });
    batch = [];
  };
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Number.POSITIVE_INFINITY });
  let number = 0;
  for await (const text of lines) {
    number++;
    bytes += Buffer.byteLength(text) + 1;
    if (text.trim() === "") continue;
    let event: ScheduleInput;
    try {
      event = JSON.parse(text) as ScheduleInput;
    } catch (error) {
      summary.failed.push({ line: number, status: 400, detail: `not JSON: ${(error as Error).message}` });
      continue;
    }
    if (typeof event === "object" && event !== null && event.id === undefined) {
      event = { ...event, id: `import-${createHash("sha256").update(text).digest("hex").slice(0, 32)}` };
    }
    batch.push({ line: number, event });
    if (batch.length >= options.batch) await flush();
    bar?.update(bytes, { lines: number });
  }
  await flush();
  bar?.update(bytes, { lines: number });
  bar?.stop();
  return summary;
}
