import Table from "cli-table3";
import type { EventBody } from "../client/client.ts";

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

export function eventTable(events: readonly EventBody[]): string {
  const table = new Table({ head: ["id", "type", "status", "runAt", "attempts", "last error"] });
  for (const e of events) {
    table.push([
      e.id,
      e.type,
      e.status,
      e.runAt,
      `${e.attempts}/${e.maxAttempts}`,
      (e.lastError ?? "").slice(0, 40),
    ]);
  }
  return events.length === 0 ? "(no events)" : table.toString();
}

export function eventDetails(e: EventBody): string {
  const table = new Table();
  for (const [key, value] of Object.entries(e)) {
    table.push({ [key]: typeof value === "string" ? value : JSON.stringify(value) });
  }
  return table.toString();
}
