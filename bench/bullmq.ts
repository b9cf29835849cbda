import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import pMap from "p-map";
import { lateness, payloadOf, sleep, until } from "./stats.ts";

/** BullMQ doing the same work on the same Redis, as the peer every figure is compared with. */
export class BullPeer {
  private readonly connection: Redis;
  constructor(private readonly url: string) {
    this.connection = new Redis(url, { maxRetriesPerRequest: null });
  }

  private queue(name: string) {
    return new Queue(name, { connection: this.connection });
  }

  async enqueueBatch(n: number, payloadBytes: number, chunk = 1_000): Promise<number> {
    const queue = this.queue(`bulk-${Date.now()}`);
    const data = payloadOf(payloadBytes);
    const started = performance.now();
    for (let i = 0; i < n; i += chunk) {
      await queue.addBulk(
        Array.from({ length: Math.min(chunk, n - i) }, (_, j) => ({
          name: "job",
          data,
          opts: { delay: 86_400_000 + ((i + j) % 1000), removeOnComplete: true },
        })),
      );
    }
    const seconds = (performance.now() - started) / 1000;
    await queue.close();
    return n / seconds;
  }

  async enqueueSingle(n: number, payloadBytes: number, inFlight: number): Promise<number> {
    const queue = this.queue(`single-${Date.now()}`);
    const data = payloadOf(payloadBytes);
    const started = performance.now();
    await pMap(
      Array.from({ length: n }),
      () => queue.add("job", data, { delay: 86_400_000, removeOnComplete: true }),
      { concurrency: inFlight },
    );
    const seconds = (performance.now() - started) / 1000;
    await queue.close();
    return n / seconds;
  }

  /** Moving `n` due delayed jobs to the wait list (`promoteJobs`): BullMQ's counterpart of a claim. */
  async promote(n: number) {
    const queue = this.queue(`promote-${Date.now()}`);
    const data = payloadOf(100);
    for (let i = 0; i < n; i += 1_000) {
      await queue.addBulk(
        Array.from({ length: Math.min(1_000, n - i) }, () => ({
          name: "job",
          data,
          opts: { delay: 86_400_000 },
        })),
      );
    }
    const started = performance.now();
    while ((await queue.getDelayedCount()) > 0) await queue.promoteJobs({ count: 1_000 });
    const perSecond = n / ((performance.now() - started) / 1000);
    await queue.obliterate({ force: true });
    await queue.close();
    return perSecond;
  }

  /** `n` delayed jobs, all due at `dueAt`; lateness of each start. */
  async burst(n: number, payloadBytes: number, leadMs: number, concurrency: number) {
    const name = `burst-${Date.now()}`;
    const queue = this.queue(name);
    const samples: { runAt: number; startedAt: number }[] = [];
    const dueAt = Date.now() + leadMs;
    const data = payloadOf(payloadBytes);
    for (let i = 0; i < n; i += 1_000) {
      const now = Date.now();
      await queue.addBulk(
        Array.from({ length: Math.min(1_000, n - i) }, () => ({
          name: "job",
          data,
          opts: { delay: dueAt - now, removeOnComplete: true, removeOnFail: true },
        })),
      );
    }
    const enqueueDone = Date.now();
    const worker = new Worker(
      name,
      async (job) => {
        samples.push({ runAt: job.timestamp + (job.opts.delay ?? 0), startedAt: Date.now() });
      },
      { connection: new Redis(this.url, { maxRetriesPerRequest: null }), concurrency },
    );
    await until(() => samples.length >= n, 120_000);
    await worker.close();
    await queue.obliterate({ force: true });
    await queue.close();
    return { ...lateness(samples), enqueueLateMs: Math.max(0, enqueueDone - dueAt) };
  }

  /** `perSecond` jobs a second for `seconds`, each enqueued `aheadMs` before it is due. */
  async steady(perSecond: number, seconds: number, aheadMs: number) {
    const name = `steady-${Date.now()}`;
    const queue = this.queue(name);
    const samples: { runAt: number; startedAt: number }[] = [];
    const worker = new Worker(
      name,
      async (job) => {
        samples.push({ runAt: job.timestamp + (job.opts.delay ?? 0), startedAt: Date.now() });
      },
      { connection: new Redis(this.url, { maxRetriesPerRequest: null }), concurrency: 50 },
    );
    const total = perSecond * seconds;
    const started = Date.now();
    for (let i = 0; i < total; i++) {
      const wait = started + (i * 1000) / perSecond - Date.now();
      if (wait > 0) await sleep(wait);
      await queue.add("job", payloadOf(100), { delay: aheadMs, removeOnComplete: true });
    }
    await until(() => samples.length >= total, aheadMs + 30_000);
    await worker.close();
    await queue.obliterate({ force: true });
    await queue.close();
    return lateness(samples);
  }

  async close() {
    this.connection.disconnect();
  }
}
