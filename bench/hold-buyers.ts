import { Agent, request } from "node:http";

/**
 * The buyers of the HTTP hot-SKU row, in a process of their own (`bench/holds-http.ts` forks it),
 * so their CPU is not the server's: told `{ url, sku, n }`, it sends `n` concurrent
 * `POST /v1/reservations` of one unit over keep-alive connections and answers `{ ms, statuses }`,
 * timed from the first request to the last answer.
 */
export interface BuyersRound {
  readonly url: string;
  readonly sku: string;
  readonly n: number;
}

export interface BuyersResult {
  readonly ms: number;
  readonly statuses: readonly number[];
}

const agent = new Agent({ keepAlive: true, maxSockets: 1_000 });

function hold(url: URL, sku: string): Promise<number> {
  const body = JSON.stringify({ items: [{ sku, quantity: 1 }], holdSeconds: 30 });
  return new Promise((resolve, reject) => {
    const sent = request(
      url,
      {
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (response) => {
        response.resume();
        response.on("end", () => resolve(response.statusCode ?? 0));
        response.on("error", reject);
      },
    );
    sent.on("error", reject);
    sent.end(body);
  });
}

process.on("message", async (round: BuyersRound) => {
  const url = new URL("/v1/reservations", round.url);
  const started = performance.now();
  const statuses = await Promise.all(Array.from({ length: round.n }, () => hold(url, round.sku)));
  const result: BuyersResult = { ms: performance.now() - started, statuses };
  process.send?.(result);
});
