import { randomUUID } from "node:crypto";
import { ScriptCode } from "../engine/codes.ts";
import { type StockKeys, stockKeys } from "../engine/keys.ts";
import { type RedisClient, runScript } from "../engine/scripts.ts";
import { type Logger, silentLogger } from "../logger.ts";
import type { Shortage } from "./errors.ts";
import type { HoldAttempt, LedgerFacts } from "./ledger-facts.ts";

export interface AdmissionOptions {
  /** Key prefix, as the engine's (HOURGLASS_KEY_PREFIX). */
  readonly prefix: string;
  /**
   * How long an admission keeps its stock taken without being settled. A process that dies between
   * the admission and its ledger write leaks the admission for at most this long. It must exceed a
   * hold's ledger write (expiry event plus transaction, with conflict retries).
   * @default 15000
   */
  readonly admitTtlMs?: number;
  /**
   * A refusal from a count older than this is checked against the ledger first (a rebuild), so a
   * change whose Redis update was lost (a crash after a release committed) refuses nothing for
   * longer. Refusals from a fresher count are answered at once: the hot path never reads DynamoDB.
   * @default 5000
   */
  readonly verifyAfterMs?: number;
  /** How long a caller waits for another process's rebuild before going to the ledger directly. @default 2000 */
  readonly rebuildWaitMs?: number;
  readonly clock?: () => number;
  readonly logger?: Logger;
}

/** A hold's admission: the member it took on each SKU admitted in Redis. */
export interface Admission {
  readonly attempt: string;
  readonly taken: readonly { sku: string; member: string }[];
}

export type AdmitResult = { readonly admitted: Admission } | { readonly refused: readonly Shortage[] };

type One =
  | { kind: "admitted"; sku: string; member: string }
  | { kind: "refused"; shortage: Shortage }
  | { kind: "bypassed"; sku: string };

/** Lifetime of the rebuild lock and of the carry it collects. A rebuild takes milliseconds. */
const LOCK_MS = 10_000;

/**
 * Atomic hold admission in Redis, in front of the stock ledger (DynamoDB, the truth). It refuses a
 * hold it cannot satisfy without touching DynamoDB, and lets through only as many holds as there
 * is stock, so a hot SKU's ledger sees no more transactions than it has units.
 *
 * It never allows an oversell: the ledger's transaction still conditions on the stock it holds.
 * Every error it can make errs high (an extra DynamoDB refusal, after which the count is rebuilt),
 * except two that err low and are bounded: an admission leaked by a crash (returns at its
 * deadline) and a lost update after stock came back (checked against the ledger on a refusal once
 * the count is `verifyAfterMs` old). Missing counts (a new SKU, a Redis flush) are rebuilt from the
 * ledger under a SET NX PX lock. When Redis fails, holds go to the ledger directly.
 *
 * Each SKU has its own hash tag (SKUs of one hold may live on different Cluster slots), so a hold
 * of several SKUs is admitted SKU by SKU, all or nothing: one refusal gives back the others.
 */
export class HoldAdmission {
  private readonly admitTtlMs: number;
  private readonly verifyAfterMs: number;
  private readonly rebuildWaitMs: number;
  private readonly clock: () => number;
  private readonly logger: Logger;
  /** Each SKU's rebuild (or wait for one) in flight in this process, by its count's key. */
  private readonly refreshing = new Map<string, Promise<void>>();

  constructor(
    private readonly redis: RedisClient,
    private readonly facts: LedgerFacts,
    private readonly options: AdmissionOptions,
  ) {
    this.admitTtlMs = options.admitTtlMs ?? 15_000;
    this.verifyAfterMs = options.verifyAfterMs ?? 5_000;
    this.rebuildWaitMs = options.rebuildWaitMs ?? 2_000;
    this.clock = options.clock ?? Date.now;
    this.logger = options.logger ?? silentLogger;
  }

  /**
   * Takes every item's quantity, or none: refused SKUs come back with what Redis has available. A
   * SKU Redis cannot answer for (it is down, or a rebuild is stuck) is let through to the ledger.
   */
  async admit(
    tenant: string,
    reservationId: string,
    attempt: string,
    items: readonly { sku: string; quantity: number }[],
  ): Promise<AdmitResult> {
    const results = await Promise.all(
      items.map((item) =>
        this.admitOne(tenant, item.sku, item.quantity, `${item.quantity}|${attempt}|${reservationId}`),
      ),
    );
    const taken = results.flatMap((r) => (r.kind === "admitted" ? [{ sku: r.sku, member: r.member }] : []));
    const refused = results.flatMap((r) => (r.kind === "refused" ? [r.shortage] : []));
    if (refused.length === 0) return { admitted: { attempt, taken } };
    await this.settle(tenant, { attempt, taken }, false);
    return { refused };
  }

  /**
   * After the ledger write: `committed` keeps the stock taken (the ledger now holds it too);
   * otherwise it is given back. Only called when the outcome is known; an unknown one is left to
   * the admission's deadline.
   */
  async settle(tenant: string, admission: Admission, committed: boolean): Promise<void> {
    await Promise.all(
      admission.taken.map(async ({ sku, member }) => {
        const keys = stockKeys(this.options.prefix, tenant, sku);
        try {
          await runScript(this.redis, "hold_settle", keys, [member, committed ? "0" : "1"]);
        } catch (error) {
          // The admission expires by itself at its deadline.
          this.logger.warn("hold admission: settle failed", { sku, error: String(error) });
        }
      }),
    );
  }

  /**
   * Stock came back in the ledger (a receipt, a release): after its write committed. A SKU without
   * a count gets one from the ledger here, off the holds' path: otherwise the first holds of a
   * flash sale, all at once, would wait for it.
   */
  async credit(tenant: string, sku: string, quantity: number): Promise<void> {
    const keys = stockKeys(this.options.prefix, tenant, sku);
    try {
      const reply = (await runScript(this.redis, "hold_credit", keys, [quantity, LOCK_MS])) as number[];
      // Unless another caller is building it already: nothing to wait for here.
      if (reply[0] === ScriptCode.EPOCH_MISSING) await this.rebuild(tenant, sku);
    } catch (error) {
      // Too low now: the next refusal once the count is verifyAfterMs old rebuilds it.
      this.logger.warn("hold admission: credit failed", { sku, error: String(error) });
    }
  }

  /**
   * Sets the SKU's count from the ledger, unless another process is doing it. Returns whether this
   * call did. Used when the count is missing, when a refusal may be stale, when the ledger refused
   * a hold Redis admitted (the count was too high), and by `reconcile`.
   */
  async rebuild(tenant: string, sku: string): Promise<boolean> {
    const keys = stockKeys(this.options.prefix, tenant, sku);
    const token = randomUUID();
    try {
      if ((await this.redis.set(keys.lock, token, "PX", LOCK_MS, "NX")) !== "OK") return false;
      // The ledger's figure first, then the pending admissions: see hold_rebuild.lua for why
      // this order leaves only errors that err high.
      const available = await this.facts.available(tenant, sku);
      const members = await this.redis.zrange(keys.pending, 0, -1);
      const attempts = members.map(parseMember).filter((a): a is HoldAttempt & { member: string } => !!a);
      const committed = attempts.length > 0 ? await this.facts.committed(tenant, attempts) : new Set();
      const done = attempts.filter((a) => committed.has(a.attempt)).map((a) => a.member);
      const reply = (await runScript(this.redis, "hold_rebuild", keys, [
        available,
        this.clock(),
        token,
        ...done,
      ])) as number[];
      return reply[0] === ScriptCode.OK;
    } catch (error) {
      // The lock expires by itself; until then holds of this SKU go to the ledger directly.
      this.logger.warn("hold admission: rebuild failed", { sku, error: String(error) });
      return false;
    }
  }

  private async admitOne(tenant: string, sku: string, quantity: number, member: string): Promise<One> {
    const keys = stockKeys(this.options.prefix, tenant, sku);
    let verified = false;
    try {
      for (let round = 0; round < 4; round++) {
        const now = this.clock();
        const reply = (await runScript(this.redis, "hold_admit", keys, [
          member,
          quantity,
          now,
          now + this.admitTtlMs,
        ])) as number[];
        if (reply[0] === ScriptCode.OK) return { kind: "admitted", sku, member };
        if (reply[0] === ScriptCode.CONFLICT) {
          const syncedAt = Number(reply[2]);
          if (verified || now - syncedAt < this.verifyAfterMs) {
            return {
              kind: "refused",
              shortage: { sku, requested: quantity, available: Math.max(0, Number(reply[1])) },
            };
          }
          verified = true;
          await this.refresh(tenant, sku, keys);
          continue;
        }
        // EPOCH_MISSING: a new SKU, or Redis lost the count.
        await this.refresh(tenant, sku, keys);
      }
    } catch (error) {
      this.logger.warn("hold admission: Redis failed, holding through the ledger alone", {
        sku,
        error: String(error),
      });
    }
    return { kind: "bypassed", sku };
  }

  /**
   * Rebuilds the count, or waits for the rebuild another process is doing: once per SKU in this
   * process, however many of its holds found the count missing or stale. The first holds of a
   * flash sale all find it missing at once; each of them taking its own turn at the lock and
   * polling for it every few milliseconds cost a hot SKU's 300 concurrent holds about a second of
   * the event loop (issue 33, finding 8).
   */
  private refresh(tenant: string, sku: string, keys: StockKeys): Promise<void> {
    const running = this.refreshing.get(keys.level);
    if (running) return running;
    const started = (async () => {
      if (!(await this.rebuild(tenant, sku))) await this.waitForRebuild(keys);
    })().finally(() => this.refreshing.delete(keys.level));
    this.refreshing.set(keys.level, started);
    return started;
  }

  /** Another process holds the rebuild lock: wait until it lets go (or it expires, in the worst case). */
  private async waitForRebuild(keys: StockKeys): Promise<void> {
    const deadline = Date.now() + this.rebuildWaitMs;
    while (Date.now() < deadline && (await this.redis.exists(keys.lock)) === 1) {
      await new Promise((done) => setTimeout(done, 5));
    }
  }
}

function parseMember(member: string): (HoldAttempt & { member: string }) | undefined {
  const [, attempt, reservationId] = member.split("|");
  return attempt && reservationId ? { member, attempt, reservationId } : undefined;
}
