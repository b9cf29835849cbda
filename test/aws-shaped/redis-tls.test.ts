import { execFile, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect, createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { checkServerIdentity, type TLSSocket, connect as tlsConnect } from "node:tls";
import { promisify } from "node:util";
import { Cluster, Redis, type RedisOptions } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLatencyProxy } from "../../scripts/aws-shaped/latency-proxy.ts";
import {
  startTlsRedis,
  type TlsRedis,
  TlsRedisError,
  type TlsRedisOptions,
} from "../../scripts/aws-shaped/redis-tls.ts";
import { withAuthToken } from "../../shared/secrets.ts";

const run = promisify(execFile);
const ROOT = new URL("../../", import.meta.url);
const dirs: string[] = [];

function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), "hg-redis-tls-"));
  dirs.push(dir);
  return dir;
}

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/**
 * What a function does with the stack's URL, in a process of its own: NODE_EXTRA_CA_CERTS is read
 * once at start-up, as in Lambda. The project's own `createRedis` (default certificate checks, the
 * password from the URL), SET/GET, and the hold_admit script over two keys sharing a hash tag, then
 * over two keys that do not (CROSSSLOT on a cluster).
 */
const CHILD = `
import { createRedis } from ${JSON.stringify(new URL("shared/engine/redis.ts", ROOT).href)};
import { runScript } from ${JSON.stringify(new URL("shared/engine/scripts.ts", ROOT).href)};
const [url, cluster] = process.argv.slice(2);
const client = createRedis(url, cluster === "true");
const errors = [];
const give = (result) => {
  process.stdout.write(JSON.stringify(result));
  process.exit(0);
};
// A certificate the process does not trust never becomes trusted: report it at once.
const failed = (error) => {
  errors.push(String(error.message));
  if (/certificate/i.test(error.message)) give({ error: "untrusted", errors });
};
client.on("error", failed);
client.on("node error", failed);
setTimeout(() => give({ error: "timed out", errors }), 5000).unref();
const now = Date.now();
try {
  await client.set("{e2e}:key", "value");
  const got = await client.get("{e2e}:key");
  await client.hset("{e2e}:level", "available", "5");
  const admitted = await runScript(client, "hold_admit", { level: "{e2e}:level", pending: "{e2e}:pending" }, ["1|1|r1", 1, now, now + 60000]);
  const crossSlot = await runScript(client, "hold_admit", { level: "{a}:level", pending: "{b}:pending" }, ["1|1|r2", 1, now, now + 60000]).then(() => "none", (error) => error.message);
  give({ got, admitted, crossSlot });
} catch (error) {
  give({ error: error.message, errors });
}
`;

interface ChildResult {
  readonly got?: string;
  readonly admitted?: unknown;
  readonly crossSlot?: string;
  readonly error?: string;
  readonly errors?: string[];
}

/** Runs CHILD against the stack, with the CA trusted (or not) the way the harness trusts it. */
async function asAFunction(redis: TlsRedis, password: string, trustCa = true): Promise<ChildResult> {
  const file = join(scratch(), "child.mts");
  writeFileSync(file, CHILD);
  const env = { ...process.env };
  if (trustCa) env.NODE_EXTRA_CA_CERTS = redis.caFile;
  else delete env.NODE_EXTRA_CA_CERTS;
  const { stdout } = await run(
    process.execPath,
    ["--import", "tsx", file, withAuthToken(redis.url, password), String(redis.cluster)],
    { cwd: ROOT, env, timeout: 20_000 },
  );
  return JSON.parse(stdout) as ChildResult;
}

/**
 * A client straight to one endpoint (no cluster logic), trusting the CA, never retrying, with no
 * ready check (its INFO would fail before AUTH). ioredis reports a refused AUTH as an `error`
 * event and closes; `errors` keeps those messages.
 */
function single(redis: TlsRedis, port = redis.port, extra: RedisOptions = {}) {
  const client = new Redis({
    host: redis.host,
    port,
    tls: { ca: readFileSync(redis.caFile) },
    lazyConnect: true,
    enableReadyCheck: false,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    ...extra,
  });
  const errors: string[] = [];
  client.on("error", (error: Error) => errors.push(error.message));
  return Object.assign(client, { errors });
}

/** Sends PING as plain text and collects whatever comes back until the server hangs up. */
function plainPing(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    let received = "";
    socket.setTimeout(5_000, () => {
      socket.destroy();
      reject(new Error("the server neither answered nor hung up"));
    });
    socket.on("connect", () => socket.write("PING\r\n"));
    socket.on("data", (chunk) => {
      received += chunk.toString("latin1");
    });
    socket.on("error", () => {});
    socket.on("close", () => resolve(received));
  });
}

async function medianPingMs(client: Redis, rounds = 15): Promise<{ median: number; min: number }> {
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const start = performance.now();
    await client.ping();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return { median: times[Math.floor(rounds / 2)]!, min: times[0]! };
}

const SHAPES: { shape: TlsRedisOptions["shape"]; password: string; user?: string }[] = [
  { shape: "replication-group", password: "auth-token-0123456789abcdef" },
  // Quotes, a backslash and a space: the config file must carry them intact.
  { shape: "serverless", password: 'p"a\\ss w0rd&#', user: "hourglass" },
];

describe.each(SHAPES)("startTlsRedis: $shape", ({ shape, password, user }) => {
  let redis: TlsRedis;

  beforeAll(async () => {
    redis = await startTlsRedis({ shape, password, dir: scratch() });
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it("gives the URL the template resolves to", () => {
    expect(redis.cluster).toBe(shape === "serverless");
    expect(redis.url).toBe(`rediss://${user ? `${user}@` : ""}127.0.0.1:${redis.port}`);
  });

  it("serves a function that trusts the CA through NODE_EXTRA_CA_CERTS: SET/GET and a Lua script", async () => {
    const result = await asAFunction(redis, password);
    expect(result.error).toBeUndefined();
    expect(result.got).toBe("value");
    expect(result.admitted).toEqual([0, 4]);
    if (redis.cluster) expect(result.crossSlot).toMatch(/CROSSSLOT/);
    else expect(result.crossSlot).toBe("none");
  });

  it("refuses a function that does not trust the CA", async () => {
    const result = await asAFunction(redis, password, false);
    expect(result.got).toBeUndefined();
    // ioredis's Cluster drops the TLS error on its slot-refresh connections and reports only that
    // the refresh failed; the single-node client passes it on.
    const reason = [result.error, ...(result.errors ?? [])].join("\n");
    expect(reason).toMatch(redis.cluster ? /Failed to refresh slots cache/ : /certificate/i);
  });

  it("presents a certificate for 127.0.0.1 and localhost that only the throwaway CA vouches for", async () => {
    const handshake = (ca?: Buffer) =>
      new Promise<TLSSocket>((resolve, reject) => {
        const socket = tlsConnect({ host: redis.host, port: redis.port, ...(ca && { ca }) }, () =>
          resolve(socket),
        );
        socket.once("error", reject);
      });
    await expect(handshake()).rejects.toThrow(/self[- ]signed certificate/);
    const socket = await handshake(readFileSync(redis.caFile));
    try {
      expect(socket.authorized).toBe(true);
      const certificate = socket.getPeerCertificate();
      expect(checkServerIdentity("localhost", certificate)).toBeUndefined();
      expect(checkServerIdentity("127.0.0.1", certificate)).toBeUndefined();
      expect(checkServerIdentity("example.com", certificate)).toBeInstanceOf(Error);
    } finally {
      socket.destroy();
    }
  });

  it("refuses an unauthenticated client and a wrong password, and admits the right one", async () => {
    const client = single(redis);
    try {
      await client.connect();
      await expect(client.ping()).rejects.toThrow(/NOAUTH/);
      const wrong = user ? client.auth(user, `${password}x`) : client.auth(`${password}x`);
      await expect(wrong).rejects.toThrow(/WRONGPASS/);
      await expect(client.ping()).rejects.toThrow(/NOAUTH/);
      expect(await (user ? client.auth(user, password) : client.auth(password))).toBe("OK");
      expect(await client.ping()).toBe("PONG");
    } finally {
      client.disconnect();
    }
  });

  it("refuses a wrong password given at connection, as a function with a stale secret would", async () => {
    const client = single(redis, redis.port, { username: user, password: "stale" });
    try {
      await expect(client.connect().then(() => client.ping())).rejects.toThrow();
      expect(client.errors.join("\n")).toMatch(/WRONGPASS/);
    } finally {
      client.disconnect();
    }
  });

  it("speaks no plain text: a PING without TLS gets no PONG, only a hang-up", async () => {
    const received = await plainPing(redis.port);
    expect(received).not.toContain("PONG");
    const client = new Redis({
      host: redis.host,
      port: redis.port,
      username: user,
      password,
      lazyConnect: true,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
      connectTimeout: 3_000,
    });
    client.on("error", () => {});
    try {
      await expect(client.connect().then(() => client.ping())).rejects.toThrow();
    } finally {
      client.disconnect();
    }
  });
});

describe("startTlsRedis: serverless behind latency proxies", () => {
  const password = "valkey-user-password";
  const delay = 5;
  let redis: TlsRedis;
  let cluster: Cluster;

  beforeAll(async () => {
    redis = await startTlsRedis({ shape: "serverless", password, dir: scratch(), latency: () => delay });
    cluster = new Cluster([{ host: redis.host, port: redis.port }], {
      dnsLookup: (address, callback) => callback(null, address),
      redisOptions: { tls: { ca: readFileSync(redis.caFile) }, username: "hourglass", password },
    });
    cluster.on("error", () => {});
  });
  afterAll(async () => {
    cluster?.disconnect();
    await redis?.stop();
  });

  it("serves a function through the proxies", async () => {
    const result = await asAFunction(redis, password);
    expect(result.error).toBeUndefined();
    expect(result.got).toBe("value");
    expect(result.admitted).toEqual([0, 4]);
    expect(result.crossSlot).toMatch(/CROSSSLOT/);
  });

  it("never lets a client reach a node's own port: slots, MOVED and every connection go through a proxy", async () => {
    // Keys on every master, so the client holds a connection to each.
    await Promise.all(Array.from({ length: 60 }, (_, i) => cluster.set(`spread:${i}`, String(i))));
    const masters = cluster.nodes("master");
    expect(masters).toHaveLength(3);
    const dialled = masters.map((node) => node.options.port!).sort((a, b) => a - b);
    const own = (
      await Promise.all(masters.map(async (node) => (await node.config("GET", "tls-port")) as string[]))
    )
      .map((pair) => Number(pair[1]))
      .sort((a, b) => a - b);
    expect(dialled).toContain(redis.port);
    for (const port of dialled) expect(own).not.toContain(port);

    // A MOVED from the first node names another node's proxy, not its own port.
    const direct = single(redis, redis.port, { username: "hourglass", password });
    try {
      await direct.connect();
      let moved = "";
      for (let i = 0; !moved && i < 100; i++) {
        moved = await direct.get(`probe:${i}`).then(
          () => "",
          (error: Error) => error.message,
        );
      }
      const port = Number(/^MOVED \d+ 127\.0\.0\.1:(\d+)$/.exec(moved)?.[1]);
      expect(dialled).toContain(port);
      expect(own).not.toContain(port);
    } finally {
      direct.disconnect();
    }

    // Each node sees the cluster client arrive from a proxy's socket, never from the client's own.
    const clientPorts = new Set(masters.map((node) => node.stream.localPort));
    for (const node of masters) {
      const peers = String(await node.client("LIST"))
        .split("\n")
        .map((line) => Number(/ addr=127\.0\.0\.1:(\d+) /.exec(` ${line}`)?.[1]))
        .filter((port) => port > 0);
      expect(peers.length).toBeGreaterThan(0);
      for (const peer of peers) expect(clientPorts.has(peer)).toBe(false);
    }
  });

  it("adds at least the round trip it was asked for, which the node's own port does not have", async () => {
    const [node] = cluster.nodes("master");
    const ownPort = Number(((await node!.config("GET", "tls-port")) as string[])[1]);
    const proxied = single(redis, node!.options.port!, { username: "hourglass", password });
    const direct = single(redis, ownPort, { username: "hourglass", password });
    try {
      await Promise.all([proxied.connect(), direct.connect()]);
      const through = await medianPingMs(proxied);
      const around = await medianPingMs(direct);
      // One delay each way, never undercut.
      expect(through.min).toBeGreaterThanOrEqual(2 * delay);
      expect(through.median - around.median).toBeGreaterThanOrEqual(2 * delay * 0.9);
      expect(around.median).toBeLessThan(delay);
    } finally {
      proxied.disconnect();
      direct.disconnect();
    }
  });
});

describe("startTlsRedis: replication group behind a latency proxy", () => {
  it("answers through the proxy, a round trip later", async () => {
    const redis = await startTlsRedis({
      shape: "replication-group",
      password: "token-0123456789abcdef",
      dir: scratch(),
      latency: () => 3,
    });
    const client = single(redis, redis.port, { password: "token-0123456789abcdef" });
    try {
      await client.connect();
      const { min } = await medianPingMs(client, 5);
      expect(min).toBeGreaterThanOrEqual(6);
      const result = await asAFunction(redis, "token-0123456789abcdef");
      expect(result.admitted).toEqual([0, 4]);
    } finally {
      client.disconnect();
      await redis.stop();
    }
  });
});

describe("startLatencyProxy", () => {
  let echo: Server;
  let port: number;

  beforeAll(async () => {
    echo = createServer((socket) => socket.pipe(socket));
    await new Promise<void>((resolve) => echo.listen(0, "127.0.0.1", resolve));
    port = (echo.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise((done) => echo.close(done));
  });

  it("keeps each direction's bytes in order however the sampled delays fall", async () => {
    // Delays from 0 to 8 ms, so a later chunk often samples a shorter delay than an earlier one.
    const proxy = await startLatencyProxy({
      target: { host: "127.0.0.1", port },
      delayMs: () => Math.random() * 8,
    });
    const socket = connect({ host: "127.0.0.1", port: proxy.port });
    let received = "";
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString();
    });
    await new Promise((resolve) => socket.once("connect", resolve));
    let sent = "";
    for (let i = 0; i < 300; i++) {
      const piece = `${i},`;
      sent += piece;
      socket.write(piece);
      // A turn of the event loop between writes, so they reach the proxy as separate chunks.
      await new Promise((resolve) => setImmediate(resolve));
    }
    // The client ends its side; the echo's replies still held for it must all arrive first.
    socket.end();
    await new Promise((resolve) => socket.once("close", resolve));
    await proxy.stop();
    expect(received).toBe(sent);
  });

  it("delays each chunk by the sampled delay in each direction", async () => {
    const proxy = await startLatencyProxy({ target: { host: "127.0.0.1", port }, delayMs: () => 4 });
    const socket = connect({ host: "127.0.0.1", port: proxy.port });
    socket.setNoDelay(true);
    socket.on("error", () => {});
    await new Promise((resolve) => socket.once("connect", resolve));
    const rounds: number[] = [];
    for (let i = 0; i < 10; i++) {
      const start = performance.now();
      socket.write("x");
      await new Promise((resolve) => socket.once("data", resolve));
      rounds.push(performance.now() - start);
    }
    socket.destroy();
    await proxy.stop();
    expect(Math.min(...rounds)).toBeGreaterThanOrEqual(8);
    expect(Math.max(...rounds)).toBeLessThan(100);
  });
});

describe("startTlsRedis: start-up and shutdown", () => {
  it("names the node that failed with its log's tail, and leaves nothing running", async () => {
    const dir = scratch();
    // Redis refuses a user name with a space in its config file, so the first node exits at once.
    const failed = startTlsRedis({ shape: "serverless", password: "pw", user: "two words", dir });
    await expect(failed).rejects.toThrow(TlsRedisError);
    const error = (await failed.catch((caught: unknown) => caught)) as TlsRedisError;
    expect(error.step).toMatch(/^node \d on port \d+$/);
    expect(error.detail).toMatch(/redis-server exited/);
    expect(error.log).toMatch(/user/i);
    expect(error.message).toContain(error.log);
    const { stdout } = await run("ps", ["-eo", "args"]);
    expect(stdout).not.toContain(dir);
  });

  it("ends its servers when the process that started them is killed with SIGKILL", async () => {
    const file = join(scratch(), "starter.mts");
    writeFileSync(
      file,
      `import { startTlsRedis } from ${JSON.stringify(new URL("scripts/aws-shaped/redis-tls.ts", ROOT).href)};
const redis = await startTlsRedis({ shape: "replication-group", password: "pw", dir: process.argv[2] });
process.stdout.write(String(redis.port) + "\\n");
setInterval(() => {}, 1000);
`,
    );
    const dir = scratch();
    const starter = spawn(process.execPath, ["--import", "tsx", file, dir], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "inherit"],
    });
    const port = await new Promise<number>((resolve, reject) => {
      starter.stdout.once("data", (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
      starter.once("exit", (code) => reject(new Error(`starter exited early (${code})`)));
    });
    expect(await accepts(port)).toBe(true);
    starter.kill("SIGKILL");
    let open = true;
    for (let i = 0; open && i < 50; i++) {
      await sleep(100);
      open = await accepts(port);
    }
    expect(open).toBe(false);
    const { stdout } = await run("ps", ["-eo", "args"]);
    expect(stdout).not.toContain(dir);
  });
});

/** True if something accepts a TCP connection on the port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}
