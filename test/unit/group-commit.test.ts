import { describe, expect, it } from "vitest";
import { GroupCommit } from "../../shared/ledger/group-commit.ts";

/** Group commit's grouping: what each write is handed, for requests of one key. */
function recorder(maxGroup: number) {
  const writes: number[][] = [];
  const commit = new GroupCommit(maxGroup, async (items: number[]) => {
    writes.push(items);
    await new Promise((done) => setTimeout(done, 5));
    return items.map((item): PromiseSettledResult<number> => ({ status: "fulfilled", value: item * 10 }));
  });
  return { writes, commit };
}

describe("group commit", () => {
  it("writes the requests of one turn of the event loop together, the first among them (issue 33, finding 8)", async () => {
    const { writes, commit } = recorder(49);
    const answers = await Promise.all([1, 2, 3].map((i) => commit.submit("sku", i)));
    expect(answers).toEqual([10, 20, 30]);
    // Before, the first was written alone and the other two waited for it: [[1], [2, 3]].
    expect(writes).toEqual([[1, 2, 3]]);
  });

  it("groups what arrives while a write is in flight, up to maxGroup, and keeps keys apart", async () => {
    const { writes, commit } = recorder(2);
    const first = commit.submit("a", 1);
    const other = commit.submit("b", 9);
    await new Promise((done) => setImmediate(done));
    const later = [2, 3, 4].map((i) => commit.submit("a", i));
    expect(await Promise.all([first, other, ...later])).toEqual([10, 90, 20, 30, 40]);
    expect(writes).toEqual([[1], [9], [2, 3], [4]]);
  });
});
