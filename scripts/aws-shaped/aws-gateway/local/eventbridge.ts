import { randomUUID } from "node:crypto";
import { AwsFault } from "../errors.ts";
import type { CallLog } from "../iam-checkpoint.ts";
import { jsonReply } from "../protocols.ts";
import type { LocalService } from "../service-call.ts";

const MAX_ENTRIES = 10;

/**
 * PutEvents, recorded: each entry EventBridge would accept is kept for the harness to read, and
 * gets an event id. An entry missing Source, DetailType or Detail fails on its own, as on AWS, and
 * a request of more than ten entries fails whole.
 */
export function eventBridge(log: CallLog): LocalService {
  return {
    PutEvents: (call, caller) => {
      const entries = Array.isArray(call.input.Entries) ? (call.input.Entries as unknown[]) : [];
      if (entries.length === 0 || entries.length > MAX_ENTRIES) {
        throw new AwsFault(
          400,
          "ValidationException",
          `1 validation error detected: Value at 'entries' failed to satisfy constraint: Member must have length between 1 and ${MAX_ENTRIES}`,
        );
      }
      let failed = 0;
      const at = Date.now();
      const results = entries.map((raw) => {
        const entry = typeof raw === "object" && raw !== null ? (raw as Record<string, unknown>) : {};
        const missing = ["Source", "DetailType", "Detail"].find((field) => typeof entry[field] !== "string");
        if (missing) {
          failed += 1;
          return { ErrorCode: "InvalidArgument", ErrorMessage: `Parameter ${missing} is not valid.` };
        }
        log.publish({ at, principal: caller.name, entry });
        return { EventId: randomUUID() };
      });
      return jsonReply(call.protocol, { FailedEntryCount: failed, Entries: results });
    },
  };
}
