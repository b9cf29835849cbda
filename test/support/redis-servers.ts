import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { type AddressInfo, createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";

/** A port nothing listens on now, whose cluster bus port (+10000) is free too. */
export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  return port!;
}

/**
 * `count` distinct ports nothing listens on now (each with its cluster bus port, +10000, in range).
 * All are held open until every one is bound: ports taken one after another, each closed before the
 * next, may come back twice (the kernel may hand out a port it just freed), and two servers of one
 * stack on the same port fail to start ("already in use").
 */
export async function freePorts(count: number): Promise<number[]> {
  const held: Server[] = [];
  try {
    while (held.length < count) {
      const server = createServer();
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(0, "127.0.0.1", () => resolve());
      });
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      if (port > 0 && port + 10_000 < 65_536) held.push(server);
      else await new Promise((done) => server.close(done));
    }
    return held.map((server) => (server.address() as AddressInfo).port);
  } finally {
    await Promise.all(held.map((server) => new Promise((done) => server.close(done))));
  }
}

export interface RedisServer {
  readonly port: number;
  readonly url: string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** A private redis-server on loopback, for tests that must break Redis without touching others. */
export async function startRedisServer(extra: string[] = []): Promise<RedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "hg-redis-"));
  const child: ChildProcess = spawn(
    "redis-server",
    [
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--dir",
      dir,
      "--save",
      "",
      "--appendonly",
      "no",
      ...extra,
    ],
    { stdio: "ignore" },
  );
  const probe = new Redis({
    port,
    host: "127.0.0.1",
    lazyConnect: true,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
  });
  probe.on("error", () => {});
  for (let i = 0; i < 100; i++) {
    try {
      await probe.connect();
      await probe.ping();
      break;
    } catch {
      probe.disconnect();
      await sleep(50);
    }
  }
  probe.disconnect();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    async kill(signal = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((done) => child.once("exit", done));
        child.kill(signal);
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Three masters on loopback, joined with `redis-cli --cluster create`, no replicas. */
export async function startRedisCluster(): Promise<{ url: string; stop(): Promise<void> }> {
  const nodes: RedisServer[] = [];
  for (let i = 0; i < 3; i++) {
    nodes.push(
      await startRedisServer(["--cluster-enabled", "yes", "--cluster-config-file", `nodes-${i}.conf`]),
    );
  }
  execFileSync(
    "redis-cli",
    [
      "--cluster",
      "create",
      ...nodes.map((n) => `127.0.0.1:${n.port}`),
      "--cluster-replicas",
      "0",
      "--cluster-yes",
    ],
    { stdio: "ignore" },
  );
  // Wait until every node agrees the cluster is up.
  for (const node of nodes) {
    const client = new Redis({ port: node.port, host: "127.0.0.1" });
    for (let i = 0; i < 100 && !(await client.cluster("INFO")).includes("cluster_state:ok"); i++)
      await sleep(50);
    client.disconnect();
  }
  return {
    url: nodes[0]!.url,
    async stop() {
      await Promise.all(nodes.map((n) => n.kill()));
    },
  };
}
