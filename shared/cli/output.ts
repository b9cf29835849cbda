import Table from "cli-table3";
import type { EventBody, StatsBody } from "../client/client.ts";

/** Prints either JSON (for scripts) or something a person reads. */
export interface Output {
  readonly json: boolean;
  print(value: unknown, human: () => string): void;
}

export function output(json: boolean): Output {
  return {
    json,
    print(value, human) {
      process.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : `${human()}\n`);
    },
  };
}

/**
 * Colour only for a person at a terminal: never when piped or redirected, never with NO_COLOR set
 * (https://no-color.org: any non-empty value).
 */
export function useColor(
  stream: { isTTY?: boolean } = process.stdout,
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  return stream.isTTY === true && !env.NO_COLOR;
}

/**
 * A table in the house style. cli-table3 colours headers red by default, which reads as an error:
 * headers are bold, and nothing is coloured unless `useColor()` says so.
 */
export function table(options: { head?: string[]; colWidths?: (number | null)[] } = {}): Table.Table {
  const color = useColor();
  return new Table({
    ...(options.head && { head: options.head }),
    ...(options.colWidths && { colWidths: options.colWidths, wordWrap: true, wrapOnWordBoundary: true }),
    style: { head: color ? ["bold"] : [], border: color ? ["grey"] : [] },
  });
}

/** Wide enough for a typical error line; longer ones wrap at word boundaries, never mid-word. */
const LAST_ERROR_WIDTH = 42;

export function eventTable(events: readonly EventBody[], empty = "(no events)"): string {
  if (events.length === 0) return empty;
  const rows = table({
    head: ["id", "type", "status", "runAt", "attempts", "last error"],
    colWidths: [null, null, null, null, null, LAST_ERROR_WIDTH],
  });
  for (const e of events) {
    rows.push([e.id, e.type, e.status, e.runAt, `${e.attempts}/${e.maxAttempts}`, e.lastError ?? ""]);
  }
  return rows.toString();
}

export function eventDetails(e: EventBody): string {
  return details(e);
}

/** One row per field: strings as they are, anything else as JSON. */
export function details(value: object): string {
  const rows = table();
  for (const [key, field] of Object.entries(value)) {
    rows.push({ [key]: typeof field === "string" ? field : JSON.stringify(field) });
  }
  return rows.toString();
}

/** `stats`: the totals, then one row per event type with a column per status that occurs. */
export function statsReport(stats: StatsBody): string {
  const far =
    stats.farPending > 0
      ? `    due beyond the near horizon (journal only): ${stats.farPending}${stats.farTruncated ? " or more" : ""}`
      : "";
  const lines = [`index size: ${stats.indexSize}    oldest overdue: ${stats.oldestOverdueMs} ms${far}`];
  const held = heldText(stats.heldBy);
  if (held) lines.push(`held back by flow control (heldBy): ${held}`);
  const statuses = Object.keys(stats.byStatus);
  if (statuses.length === 0) return [...lines, "(no events)"].join("\n");
  const byType = table({ head: ["type", ...statuses, "total", "heldBy"] });
  for (const [type, counts] of Object.entries(stats.byType)) {
    const row = statuses.map((s) => (counts as Record<string, number>)[s] ?? 0);
    byType.push([
      type,
      ...row.map(String),
      String(row.reduce((a, b) => a + b, 0)),
      heldText(stats.heldByType[type] ?? {}),
    ]);
  }
  const totals = statuses.map((s) => stats.byStatus[s] ?? 0);
  byType.push(["all types", ...totals.map(String), String(totals.reduce((a, b) => a + b, 0)), held]);
  return [...lines, byType.toString()].join("\n");
}

/** `paused 3, rate 1`: the reasons that hold events back, without the zeros. */
function heldText(heldBy: Readonly<Record<string, number>>): string {
  return Object.entries(heldBy)
    .filter(([, n]) => n > 0)
    .map(([reason, n]) => `${reason} ${n}`)
    .join(", ");
}
