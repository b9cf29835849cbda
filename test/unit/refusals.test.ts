import { describe, expect, it } from "vitest";
import { EventNotFoundError, EventStateConflictError } from "../../shared/events/errors.ts";
import { journalWrite, type Refusal } from "../../shared/events/refusals.ts";
import { JournalConditionError } from "../../shared/journal/errors.ts";
import type { JournalItem } from "../../shared/journal/item.ts";

const item = (status: JournalItem["status"]) => ({ id: "e1", status }) as JournalItem;
const refused = (existing: JournalItem | undefined) =>
  Promise.reject(new JournalConditionError("markCancelled", "t#e1", existing));
const cancel: Refusal = { id: "e1", operation: "cancel", accepts: (e) => e.status === "cancelled" };

describe("a refused journal write read as the API's answer", () => {
  it("answers with the item written", async () => {
    // Prepare
    const written = item("cancelled");
    // Act
    const outcome = await journalWrite(Promise.resolve(written), cancel);
    // Assess
    expect(outcome).toEqual({ item: written, written: true });
  });

  it("reads no item as not found, after undoing the index's part", async () => {
    const undone: string[] = [];
    const refusal = { ...cancel, onMissing: async () => void undone.push("tombstone") };
    await expect(journalWrite(refused(undefined), refusal)).rejects.toBeInstanceOf(EventNotFoundError);
    expect(undone).toEqual(["tombstone"]);
  });

  it("reads an item the operation accepts as done, and one it does not as a conflict", async () => {
    const done = await journalWrite(refused(item("cancelled")), cancel);
    expect(done).toEqual({ item: item("cancelled"), written: false });
    const conflict = await journalWrite(refused(item("succeeded")), cancel).catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(EventStateConflictError);
    expect(conflict).toMatchObject({ id: "e1", status: "succeeded", operation: "cancel" });
  });

  it("passes any other error through", async () => {
    const down = new Error("DynamoDB is down");
    await expect(journalWrite(Promise.reject(down), cancel)).rejects.toBe(down);
  });
});
