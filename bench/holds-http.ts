import { fork } from "node:child_process";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { serve } from "@hono/node-server";
import { apiDeps, createApp } from "../shared/http/app.ts";
import type { BuyersResult, BuyersRound } from "./hold-buyers.ts";
import type { HoldRun } from "./holds.ts";
import { benchHourglass } from "./hourglass.ts";

/**
 * `buyers` concurrent single-unit holds on one SKU with `stock` units, as a client sees them:
 * `POST /v1/reservations` from a client on loopback to the real HTTP app (as `npm start` serves
 * it) on the full local stack, from the first request to the last answer. The holds last 30 s, as
 * in the review that measured this path (issue 33, finding 8), so their expiry events are near ones
 * (in the Redis index as well as the journal), unlike the 600 s of the ledger-only row.
 *
 * The buyers are another process (`hold-buyers.ts`), as clients are: their HTTP client's CPU is
 * not the server's. A warm-up round of as many buyers on another SKU goes first, untimed: it opens
 * their keep-alive connections (API Gateway keeps its own to the service on AWS) and warms the
 * server's and DynamoDB Local's JIT, as the ledger-only row's warm-up does.
 */
export async function httpHotHolds(
  redisUrl: string,
  buyers: number,
  stock: number,
): Promise<HoldRun & { table: string }> {
  const { hourglass } = await benchHourglass("full", redisUrl);
  const app = createApp(apiDeps(hourglass));
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, () => resolve(s));
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clients = fork(BUYERS, [], { execArgv: ["--import", "tsx"] });
  const ask = (round: BuyersRound) =>
    new Promise<BuyersResult>((resolve, reject) => {
      clients.once("message", (result) => resolve(result as BuyersResult));
      clients.once("exit", (code) => reject(new Error(`the buyers' process exited (${code})`)));
      clients.send(round);
    });
  const round = async (sku: string, n: number, units: number): Promise<HoldRun> => {
    await hourglass.ledger!.receive("default", sku, { quantity: units });
    const { ms, statuses } = await ask({ url: base, sku, n });
    const other = statuses.find((status) => status !== 201 && status !== 409);
    if (other !== undefined) throw new Error(`a hold answered ${other}`);
    const won = statuses.filter((status) => status === 201).length;
    return { ms, won, refused: n - won };
  };
  try {
    await round("warm-up", buyers, Math.ceil(stock / 10));
    return { ...(await round("hot", buyers, stock)), table: hourglass.config.tables.ledger };
  } finally {
    clients.removeAllListeners("exit");
    clients.kill();
    await new Promise<void>((done) => server.close(() => done()));
    await hourglass.close();
  }
}

const BUYERS = fileURLToPath(new URL("./hold-buyers.ts", import.meta.url));
