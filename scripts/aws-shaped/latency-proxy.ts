import { connect, createServer, type Server, type Socket } from "node:net";
import { performance } from "node:perf_hooks";

export interface LatencyProxy {
  readonly port: number;
  stop(): Promise<void>;
}

export interface LatencyProxyOptions {
  readonly target: { readonly host: string; readonly port: number };
  /** One-way delay for each chunk, in ms, sampled per chunk and per direction. */
  readonly delayMs: () => number;
  /** The port to listen on (127.0.0.1); a free one if omitted. */
  readonly port?: number;
}

/** The proxy could not listen: `port` is the one asked for (0 for any). */
export class LatencyProxyError extends Error {
  constructor(
    readonly port: number,
    override readonly cause: NodeJS.ErrnoException,
  ) {
    super(`latency proxy could not listen on 127.0.0.1:${port}: ${cause.message}`);
    this.name = "LatencyProxyError";
  }
}

/**
 * A TCP proxy on loopback that holds every chunk, in each direction, for a sampled delay: the
 * network round trip between a function and its cache, which loopback does not have. It moves raw
 * bytes (TLS passes through, so clients still verify the server's certificate end to end) and
 * keeps their order per connection and direction.
 */
export async function startLatencyProxy(options: LatencyProxyOptions): Promise<LatencyProxy> {
  const sockets = new Set<Socket>();
  // Half-open allowed on both legs: a client that ends its side still gets the replies held for it;
  // each leg ends only when the end itself has crossed the proxy.
  const server: Server = createServer({ pauseOnConnect: true, allowHalfOpen: true }, (client) => {
    const upstream = connect({ host: options.target.host, port: options.target.port, allowHalfOpen: true });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.setNoDelay(true);
      socket.once("close", () => sockets.delete(socket));
      // Either side failing ends both, as a broken network path would.
      socket.on("error", () => {
        client.destroy();
        upstream.destroy();
      });
    }
    upstream.once("connect", () => {
      delay(client, upstream, options.delayMs);
      delay(upstream, client, options.delayMs);
      client.resume();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error) => reject(new LatencyProxyError(options.port ?? 0, error)));
    server.listen(options.port ?? 0, "127.0.0.1", () => resolve());
  });
  // Once listening, a failed accept (EMFILE under a burst) costs that one connection, whose client
  // sees it fail; it must not end the process that hosts the proxy.
  server.on("error", () => {});
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    port,
    async stop() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

/** A chunk waiting for its release time (performance.now() ms); null stands for the end of input. */
interface Held {
  readonly at: number;
  readonly chunk: Buffer | null;
}

/**
 * Forwards `from` to `to`, each chunk released at max(the previous chunk's release, arrival +
 * delay): a chunk never overtakes an earlier one, however the samples fall. One queue and one timer
 * per direction, rather than a timer per chunk: timers due in the same millisecond are not
 * guaranteed to fire in the order they were set.
 */
function delay(from: Socket, to: Socket, delayMs: () => number): void {
  const queue: Held[] = [];
  let last = 0;
  /** Cancels the pending wake-up; undefined when none is pending. */
  let cancel: (() => void) | undefined;

  const release = () => {
    cancel = undefined;
    const now = performance.now();
    while (queue.length > 0 && queue[0]!.at <= now) {
      const { chunk } = queue.shift()!;
      if (chunk === null) {
        to.end();
        return;
      }
      // The far side is slow to read: stop reading this side until it catches up, so the proxy
      // holds at most what is in flight instead of everything a fast sender writes.
      if (!to.write(chunk) && !from.isPaused()) {
        from.pause();
        to.once("drain", () => from.resume());
      }
    }
    arm();
  };

  // Timers have millisecond resolution and, measured against performance.now(), may fire a little
  // early: they serve the wait down to its last millisecond, and the next event-loop turns
  // (setImmediate) the rest. A release time is thus never undercut, and a sub-millisecond delay
  // (ElastiCache within an AZ) stays sub-millisecond instead of becoming a whole timer tick. The
  // price: while a chunk is within 1 ms of its release this loop spins, taking CPU under traffic.
  const arm = () => {
    const head = queue[0];
    if (head === undefined || cancel !== undefined) return;
    const wait = head.at - performance.now();
    if (wait >= 1) {
      const timeout = setTimeout(release, Math.floor(wait));
      cancel = () => clearTimeout(timeout);
    } else {
      const immediate = setImmediate(release);
      cancel = () => clearImmediate(immediate);
    }
  };

  const hold = (chunk: Buffer | null) => {
    const sampled = delayMs();
    const at = Math.max(last, performance.now() + (Number.isFinite(sampled) && sampled > 0 ? sampled : 0));
    last = at;
    queue.push({ at, chunk });
    arm();
  };

  from.on("data", (chunk: Buffer) => hold(chunk));
  from.once("end", () => hold(null));
  // A connection torn down on either side drops what is still held, as a reset would.
  to.once("close", () => {
    cancel?.();
    cancel = undefined;
    queue.length = 0;
  });
}
