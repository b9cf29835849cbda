import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { type AddressInfo, createServer, type Server } from "node:net";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { type Certificates, createCertificates } from "./certificates.ts";
import { type LatencyProxy, LatencyProxyError, startLatencyProxy } from "./latency-proxy.ts";
import { type GuardedProcess, logTail, spawnGuarded } from "./processes.ts";

export interface TlsRedisOptions {
  readonly shape: "replication-group" | "serverless"; // single node + requirepass | 3-node cluster + ACL user
  /** AUTH token (replication group) or the ACL user's password (serverless) */
  readonly password: string;
  /** ACL user name for serverless; @default "hourglass" */
  readonly user?: string;
  /** where certs, configs and node files go (created if missing) */
  readonly dir: string;
  /** per-chunk one-way delay in ms; undefined → no proxy */
  readonly latency?: () => number;
}

export interface TlsRedis {
  readonly host: "127.0.0.1";
  /** the endpoint port clients are given (the first node's proxy port when proxied) */
  readonly port: number;
  readonly caFile: string; // PEM of the throwaway CA
  readonly cluster: boolean;
  /** `rediss://[user@]127.0.0.1:port` without password — what the template's URL resolves to */
  readonly url: string;
  stop(): Promise<void>;
}

/**
 * Starting failed at `step`; everything started was stopped. `log` is the tail of the server log
 * concerned (or of redis-cli's output), and `portTaken` says another process bound a port between
 * its pick and its use, the one failure a fresh attempt cures.
 */
export class TlsRedisError extends Error {
  constructor(
    readonly step: string,
    readonly detail: string,
    readonly log: string,
    readonly portTaken = false,
  ) {
    super(`TLS Redis: ${step}: ${detail}${log ? `\n--- log tail ---\n${log}` : ""}`);
    this.name = "TlsRedisError";
  }
}

const HOST = "127.0.0.1";
/** ElastiCache Serverless is a cluster; three masters are the fewest `--cluster create` accepts. */
const CLUSTER_NODES = 3;
/** Each wait (a node answering, the cluster agreeing) gets this long before start-up gives up. */
const WAIT_MS = 30_000;
/** Start-up attempts when a picked port was taken by someone else before the server bound it. */
const ATTEMPTS = 3;
/** The cluster bus listens here, above the client port (Redis's default offset). */
const BUS_OFFSET = 10_000;

/**
 * Redis as ElastiCache runs it, on loopback: TLS only (no plain port), with an AUTH token on a
 * single node (a replication group, cluster mode off) or an ACL user on a three-master cluster
 * (Serverless Valkey), and optionally a latency proxy in front of each node that every client
 * connection, redirects included, goes through.
 */
export async function startTlsRedis(options: TlsRedisOptions): Promise<TlsRedis> {
  mkdirSync(options.dir, { recursive: true });
  const certificates = createCertificates(join(options.dir, "tls"));
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options, certificates);
    } catch (error) {
      if (!(error instanceof TlsRedisError && error.portTaken) || attempt === ATTEMPTS) throw error;
    }
  }
}

/** One node: where it listens, what clients are told to dial, and its server process. */
interface Node {
  readonly index: number;
  readonly port: number;
  /** Its proxy's port when proxied, else its own port: what CLUSTER SLOTS and MOVED announce. */
  readonly endpoint: number;
  readonly logFile: string;
  readonly process: GuardedProcess;
}

async function startOnce(options: TlsRedisOptions, certs: Certificates): Promise<TlsRedis> {
  const cluster = options.shape === "serverless";
  const user = cluster ? (options.user ?? "hourglass") : undefined;
  const count = cluster ? CLUSTER_NODES : 1;
  const latency = options.latency;
  const ports = await reservePorts(count, cluster, latency ? count : 0);
  const proxies: LatencyProxy[] = [];
  const nodes: Node[] = [];
  const stop = async () => {
    await Promise.all([...nodes.map((node) => node.process.stop()), ...proxies.map((p) => p.stop())]);
  };
  try {
    // Proxies first, on their picked ports: each node announces its proxy's port from the start,
    // so no client ever learns a node's own port.
    if (latency) {
      for (const [i, port] of ports.proxies.entries()) {
        proxies.push(await startProxy({ host: HOST, port: ports.nodes[i]! }, latency, port));
      }
    }
    for (const [index, port] of ports.nodes.entries()) {
      const dir = join(options.dir, `node-${index}`);
      // A previous run's nodes.conf would make this node refuse to join a new cluster.
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(dir, { recursive: true });
      const endpoint = proxies[index]?.port ?? port;
      const configFile = join(dir, "redis.conf");
      writeFileSync(configFile, nodeConfig({ port, endpoint, dir, certs, cluster, user, options }), {
        mode: 0o600,
      });
      const logFile = join(dir, "redis.log");
      nodes.push({
        index,
        port,
        endpoint,
        logFile,
        process: spawnGuarded("redis-server", [configFile], logFile),
      });
    }
    const auth = { username: user, password: options.password, ca: readFileSync(certs.caFile) };
    await Promise.all(nodes.map((node) => waitUntilAnswering(node, auth)));
    if (cluster) {
      await createCluster(nodes, certs.caFile, user!, options.password, options.dir);
      await Promise.all(nodes.map((node) => waitUntilClusterOk(node, nodes, auth)));
    }
  } catch (error) {
    await stop();
    throw error;
  }
  const first = nodes[0]!;
  return {
    host: HOST,
    port: first.endpoint,
    caFile: certs.caFile,
    cluster,
    url: `rediss://${user ? `${encodeURIComponent(user)}@` : ""}${HOST}:${first.endpoint}`,
    stop,
  };
}

interface NodeConfigInput {
  readonly port: number;
  readonly endpoint: number;
  readonly dir: string;
  readonly certs: Certificates;
  readonly cluster: boolean;
  readonly user: string | undefined;
  readonly options: TlsRedisOptions;
}

/**
 * The node's redis.conf, kept in its directory so a failed start can be read and rerun by hand.
 * Values are quoted: a password or a path may hold spaces or quotes.
 */
function nodeConfig({ port, endpoint, dir, certs, cluster, user, options }: NodeConfigInput): string {
  const lines = [
    // TLS only, as ElastiCache with encryption in transit: no plain-text port at all.
    "port 0",
    `tls-port ${port}`,
    `bind ${HOST}`,
    `tls-cert-file ${quote(certs.certFile)}`,
    `tls-key-file ${quote(certs.keyFile)}`,
    `tls-ca-cert-file ${quote(certs.caFile)}`,
    // ElastiCache verifies no client certificate; clients prove themselves with AUTH.
    "tls-auth-clients no",
    `dir ${quote(dir)}`,
    'save ""',
    "appendonly no",
    'logfile ""',
  ];
  if (!cluster) {
    lines.push(`requirepass ${quote(options.password)}`);
    return `${lines.join("\n")}\n`;
  }
  lines.push(
    "cluster-enabled yes",
    "cluster-config-file nodes.conf",
    // The bus over TLS too, and on a port picked free with this one (not derived from the
    // announced port, which is the proxy's).
    "tls-cluster yes",
    "tls-replication yes",
    `cluster-port ${port + BUS_OFFSET}`,
    `cluster-announce-ip ${HOST}`,
    // With tls-cluster on, the TLS port is the one CLUSTER SLOTS and MOVED give clients.
    `cluster-announce-tls-port ${endpoint}`,
    // RBAC as on Serverless: the one user, every key, channel and command; the default user off,
    // or an unauthenticated client would still get in.
    `user ${quote(user!)} on ${quote(`>${options.password}`)} "~*" "&*" "+@all"`,
    "user default off",
  );
  return `${lines.join("\n")}\n`;
}

/** A double-quoted redis.conf string: backslash and quote escaped, anything else non-printable as \xHH. */
function quote(value: string): string {
  let out = "";
  for (const byte of Buffer.from(value, "utf8")) {
    if (byte === 0x22 || byte === 0x5c) out += `\\${String.fromCharCode(byte)}`;
    else if (byte >= 0x20 && byte < 0x7f) out += String.fromCharCode(byte);
    else out += `\\x${byte.toString(16).padStart(2, "0")}`;
  }
  return `"${out}"`;
}

async function startProxy(
  target: { host: string; port: number },
  delayMs: () => number,
  port: number,
): Promise<LatencyProxy> {
  try {
    return await startLatencyProxy({ target, delayMs, port });
  } catch (error) {
    if (!(error instanceof LatencyProxyError)) throw error;
    const taken = error.cause.code === "EADDRINUSE";
    throw new TlsRedisError(`latency proxy for port ${target.port}`, error.message, "", taken);
  }
}

interface Auth {
  readonly username: string | undefined;
  readonly password: string;
  readonly ca: Buffer;
}

/** A one-shot client straight to a node's own port: TLS verified against the CA, authenticated. */
function probe(node: Node, auth: Auth): Redis {
  const client = new Redis({
    host: HOST,
    port: node.port,
    tls: { ca: auth.ca },
    username: auth.username,
    password: auth.password,
    lazyConnect: true,
    connectTimeout: 2_000,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
  });
  client.on("error", () => {});
  return client;
}

/** Waits until the node answers PING over TLS as the configured user, or fails with its log. */
async function waitUntilAnswering(node: Node, auth: Auth): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  let last = "no attempt yet";
  while (node.process.exitCode === null && Date.now() < deadline) {
    const client = probe(node, auth);
    try {
      await client.connect();
      if ((await client.ping()) === "PONG") return;
    } catch (error) {
      last = error instanceof Error ? error.message : String(error);
    } finally {
      client.disconnect();
    }
    await sleep(50);
  }
  throw nodeError(node, `did not answer PING over TLS with auth (last: ${last})`);
}

/**
 * Waits until the node reports `cluster_state:ok`, knows every node, and its CLUSTER SLOTS names
 * each node by its announced endpoint: what a client seeded from any node will be told.
 */
async function waitUntilClusterOk(node: Node, nodes: readonly Node[], auth: Auth): Promise<void> {
  const expected = nodes.map((n) => n.endpoint).sort((a, b) => a - b);
  const deadline = Date.now() + WAIT_MS;
  let last = "no answer yet";
  const client = probe(node, auth);
  try {
    while (node.process.exitCode === null && Date.now() < deadline) {
      try {
        if (client.status !== "ready") await client.connect();
        const info = String(await client.cluster("INFO"));
        const slots = await client.cluster("SLOTS");
        // Each range's first node is its master: [start, end, [host, port, id, …], …replicas].
        const announced = [...new Set(slots.map((range) => range[2]?.[1] ?? 0))].sort((a, b) => a - b);
        last = `${info.match(/cluster_state:\w+/)?.[0]}, ${info.match(/cluster_known_nodes:\d+/)?.[0]}, slots served at ports ${announced.join(",")}`;
        if (
          info.includes("cluster_state:ok") &&
          info.includes(`cluster_known_nodes:${nodes.length}`) &&
          announced.join(",") === expected.join(",")
        ) {
          return;
        }
      } catch (error) {
        last = error instanceof Error ? error.message : String(error);
        client.disconnect();
      }
      await sleep(100);
    }
  } finally {
    client.disconnect();
  }
  throw nodeError(node, `did not report the cluster ready with ports ${expected.join(",")} (last: ${last})`);
}

const run = promisify(execFile);

/**
 * Joins the nodes with `redis-cli --cluster create`, dialling their own ports. The password goes
 * in REDISCLI_AUTH, not on the command line, where `ps` would show it. Asynchronous on purpose:
 * redis-cli's closing check dials the announced (proxy) ports, and the proxies run in this event
 * loop, which a synchronous exec would block.
 */
async function createCluster(
  nodes: readonly Node[],
  caFile: string,
  user: string,
  password: string,
  dir: string,
): Promise<void> {
  const args = [
    "--tls",
    "--cacert",
    caFile,
    "--user",
    user,
    "--cluster",
    "create",
    ...nodes.map((node) => `${HOST}:${node.port}`),
    "--cluster-replicas",
    "0",
    "--cluster-yes",
  ];
  try {
    const { stdout } = await run("redis-cli", args, {
      env: { ...process.env, REDISCLI_AUTH: password },
      timeout: WAIT_MS,
    });
    writeFileSync(join(dir, "cluster-create.log"), stdout);
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; message?: string };
    const output = `${failed.stdout ?? ""}${failed.stderr ?? ""}`;
    writeFileSync(join(dir, "cluster-create.log"), output);
    throw new TlsRedisError(
      "redis-cli --cluster create",
      failed.message?.split("\n")[0] ?? "failed",
      output.trimEnd().split("\n").slice(-20).join("\n"),
    );
  }
}

function nodeError(node: Node, detail: string): TlsRedisError {
  const log = logTail(node.logFile);
  const exited = node.process.exitCode === null ? "" : ` (redis-server exited with ${node.process.exitCode})`;
  return new TlsRedisError(
    `node ${node.index} on port ${node.port}`,
    `${detail}${exited}`,
    log,
    log.includes("Address already in use"),
  );
}

/**
 * Ports nothing listens on now: `nodes` of them with their cluster bus port (+10000) free too when
 * `busPorts`, then `proxies` more. All are held open until every one is bound: ports taken one after
 * another, each closed before the next, may come back twice. Another process can still take one
 * before the server binds it; startTlsRedis then tries again with fresh ones.
 */
async function reservePorts(
  nodes: number,
  busPorts: boolean,
  proxies: number,
): Promise<{ nodes: number[]; proxies: number[] }> {
  const held: Server[] = [];
  const picked: number[] = [];
  try {
    while (picked.length < nodes + proxies) {
      const server = await listen(0);
      held.push(server);
      const port = (server.address() as AddressInfo).port;
      if (picked.length < nodes && busPorts) {
        if (port + BUS_OFFSET >= 65_536) continue;
        const bus = await listen(port + BUS_OFFSET).catch(() => undefined);
        if (!bus) continue;
        held.push(bus);
      }
      picked.push(port);
    }
    return { nodes: picked.slice(0, nodes), proxies: picked.slice(nodes) };
  } finally {
    await Promise.all(held.map((server) => new Promise((done) => server.close(done))));
  }
}

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(port, HOST, () => resolve(server));
  });
}
