/**
 * Group commit: requests for the same key that arrive while a write for that key is in flight are
 * written together next, up to `maxGroup` at a time; under contention, N requests become about
 * N / maxGroup writes instead of N writes that conflict with each other. The first write waits one
 * turn of the event loop (setImmediate), so the requests a burst brings in the same turn (the
 * holds one Redis reply admitted, the expiry events one batch write scheduled) start together
 * instead of behind a first write of one.
 */
export class GroupCommit<T, R> {
  private readonly queues = new Map<string, Queued<T, R>[]>();

  constructor(
    private readonly maxGroup: number,
    /** Writes one group; answers each item's outcome, in order. Must not throw. */
    private readonly write: (items: T[]) => Promise<PromiseSettledResult<R>[]>,
  ) {}

  submit(key: string, item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const queued = { item, resolve, reject };
      const queue = this.queues.get(key);
      if (queue) {
        queue.push(queued);
        return;
      }
      const fresh = [queued];
      this.queues.set(key, fresh);
      setImmediate(() => void this.drain(key, fresh));
    });
  }

  private async drain(key: string, queue: Queued<T, R>[]): Promise<void> {
    while (queue.length > 0) {
      const group = queue.splice(0, this.maxGroup);
      const outcomes = await this.write(group.map((q) => q.item)).catch((error: unknown) =>
        group.map((): PromiseSettledResult<R> => ({ status: "rejected", reason: error })),
      );
      group.forEach((q, i) => {
        const outcome = outcomes[i];
        if (outcome?.status === "fulfilled") q.resolve(outcome.value);
        else q.reject(outcome?.reason ?? new Error("group commit lost an outcome"));
      });
    }
    this.queues.delete(key);
  }
}

interface Queued<T, R> {
  readonly item: T;
  resolve(value: R): void;
  reject(reason: unknown): void;
}
