import { mkdtempSync, rmSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dynamoAnswers, type RunningStack, sqsAnswers, startLocalStack } from "../../shared/local/stack.ts";

/** This machine's own addresses other than loopback (what `hostname -I` lists). */
const outside = Object.values(networkInterfaces())
  .flatMap((entries) => entries ?? [])
  .filter((entry) => !entry.internal && !entry.address.startsWith("fe80:"))
  .map((entry) => entry.address);

/** A port nothing listens on now, so the stack starts its own stand-ins instead of reusing one. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** "open" if a TCP connection to host:port is accepted, else the error code (ECONNREFUSED…). */
function connect(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    socket.setTimeout(3_000, () => {
      socket.destroy();
      resolve("timeout");
    });
    socket.once("connect", () => {
      socket.destroy();
      resolve("open");
    });
    socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

// DynamoDB Local has no bind flag: without its loopback launcher it listened on every interface,
// and anyone on the network could read and write every tenant's journal (issue 33, finding 12).
describe.skipIf(outside.length === 0)(
  "the embedded stack is reachable from this machine only",
  { timeout: 180_000 },
  () => {
    const dataDir = mkdtempSync(join(tmpdir(), "hg-loopback-"));
    let stack: RunningStack;
    let ports: { redis: number; dynamodb: number; sqs: number };

    beforeAll(async () => {
      ports = { redis: await freePort(), dynamodb: await freePort(), sqs: await freePort() };
      stack = await startLocalStack({
        redisUrl: `redis://127.0.0.1:${ports.redis}`,
        dynamoPort: ports.dynamodb,
        sqsPort: ports.sqs,
        dataDir,
        persist: false,
      });
    }, 180_000);
    afterAll(async () => {
      await stack?.stop();
      rmSync(dataDir, { recursive: true, force: true });
    });

    it("started every stand-in itself, and each answers on its documented loopback endpoint", async () => {
      expect([...stack.started].sort()).toEqual(["dynamodb", "redis", "sqs"]);
      expect(stack.dynamoEndpoint).toBe(`http://127.0.0.1:${ports.dynamodb}`);
      expect(await dynamoAnswers(stack.dynamoEndpoint)).toBe(true);
      expect(await sqsAnswers(stack.sqsEndpoint)).toBe(true);
      expect(await connect("127.0.0.1", ports.redis)).toBe("open");
    });

    it.each(["dynamodb", "sqs", "redis"] as const)(
      "%s refuses connections on this machine's other addresses",
      async (service) => {
        for (const address of outside) {
          expect(
            await connect(address, ports[service]),
            `${service} on ${address}:${ports[service]}`,
          ).not.toBe("open");
        }
      },
    );
  },
);
