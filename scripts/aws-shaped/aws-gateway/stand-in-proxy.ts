import http, { type IncomingHttpHeaders, type OutgoingHttpHeaders, type ServerResponse } from "node:http";
import https from "node:https";
import { pipeline } from "node:stream/promises";
import { GatewayConfigError } from "./errors.ts";

/** Headers that describe one hop's connection, not the message; never passed on. */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
  "te",
  "trailer",
  "host",
  "content-length",
  // The gateway already read the whole body; the stand-in has nothing to agree to.
  "expect",
]);

/** The stand-in did not answer (it is down or restarting); the caller answers with a 5xx. */
export class StandInUnreachableError extends Error {
  constructor(
    readonly endpoint: string,
    cause: unknown,
  ) {
    super(`${endpoint} did not answer: ${(cause as Error).message}`, { cause });
    this.name = "StandInUnreachableError";
  }
}

/**
 * Passes a call on to a stand-in (DynamoDB Local, fauxqs) over kept-alive connections: the body
 * bytes exactly as the SDK signed them, the Host the stand-in's own, and its answer streamed back
 * as it comes (a long poll's wait is the stand-in's, not the gateway's).
 */
export class StandInProxy {
  private readonly target: URL;
  private readonly agent: http.Agent;
  private readonly transport: typeof http | typeof https;

  constructor(option: string, endpoint: string) {
    let target: URL;
    try {
      target = new URL(endpoint);
    } catch {
      throw new GatewayConfigError(option, `${endpoint} is not a URL`);
    }
    if (target.protocol !== "http:" && target.protocol !== "https:") {
      throw new GatewayConfigError(option, `${endpoint} is neither http nor https`);
    }
    this.target = target;
    this.transport = target.protocol === "https:" ? https : http;
    this.agent = new this.transport.Agent({ keepAlive: true, maxSockets: 512 });
  }

  /**
   * Sends the call and streams the answer into `response`. Rejects with StandInUnreachableError
   * only while nothing has been written yet, so the caller can still answer in the protocol's shape.
   */
  forward(
    method: string,
    pathAndQuery: string,
    headers: IncomingHttpHeaders,
    body: Buffer,
    response: ServerResponse,
  ): Promise<void> {
    const outgoing: OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(headers)) {
      if (value !== undefined && !HOP_BY_HOP.has(name)) outgoing[name] = value;
    }
    outgoing.host = this.target.host;
    outgoing["content-length"] = body.length;
    const basePath = this.target.pathname === "/" ? "" : this.target.pathname.replace(/\/$/, "");

    return this.send(method, `${basePath}${pathAndQuery}`, outgoing, body, response, true);
  }

  private send(
    method: string,
    path: string,
    headers: OutgoingHttpHeaders,
    body: Buffer,
    response: ServerResponse,
    mayRetry: boolean,
  ): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const upstream = this.transport.request(
        {
          protocol: this.target.protocol,
          hostname: this.target.hostname,
          port: this.target.port,
          method,
          path,
          headers,
          agent: this.agent,
        },
        (answer) => {
          const back: OutgoingHttpHeaders = {};
          for (const [name, value] of Object.entries(answer.headers)) {
            if (value !== undefined && (!HOP_BY_HOP.has(name) || name === "content-length"))
              back[name] = value;
          }
          response.writeHead(answer.statusCode ?? 502, back);
          // A caller that gives up (an aborted long poll) tears the upstream request down with it.
          pipeline(answer, response).then(resolve, () => resolve());
        },
      );
      upstream.on("error", (error: NodeJS.ErrnoException) => {
        if (response.destroyed) {
          // The caller left first (its close tore this request down); nobody is waiting for an answer.
          resolve();
        } else if (response.headersSent) {
          response.destroy(error);
          resolve();
        } else if (mayRetry && upstream.reusedSocket && error.code === "ECONNRESET") {
          // The stand-in closed an idle kept-alive connection just as this call went out on it: the
          // call never reached it, so it goes again on a fresh connection (Node's documented remedy).
          this.send(method, path, headers, body, response, false).then(resolve, reject);
        } else {
          reject(new StandInUnreachableError(this.target.origin, error));
        }
      });
      response.on("close", () => {
        if (!response.writableFinished) upstream.destroy();
      });
      upstream.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
