import type { PublishedEntry, RecordedCall } from "./types.ts";

/**
 * Every authorization the gateway decided, the ones IAM refused, and every EventBridge entry
 * accepted. Append-only arrays handed out as they are, so recording and reading cost the same
 * whether a run made ten calls or ten million.
 */
export class CallLog {
  private readonly all: RecordedCall[] = [];
  private readonly refused: RecordedCall[] = [];
  private readonly entries: PublishedEntry[] = [];

  record(call: RecordedCall): void {
    this.all.push(call);
    if (call.decision !== "Allowed") this.refused.push(call);
  }

  publish(entry: PublishedEntry): void {
    this.entries.push(entry);
  }

  calls(): readonly RecordedCall[] {
    return this.all;
  }

  denied(): readonly RecordedCall[] {
    return this.refused;
  }

  published(): readonly PublishedEntry[] {
    return this.entries;
  }
}
