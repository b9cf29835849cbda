import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import type { Behaviour, HistoryWriter } from "./history.ts";

/**
 * The webhook receiver: every delivery is recorded with the receiver's clock (never-early is judged
 * by it) and its signature checked with the tenant's secret. It plays the handler's part: the body
 * says how to answer (fail some attempts, hang past the timeout, answer slowly, or 410).
 */
export class Receiver {
  private server: Server | undefined;
  /** Each tenant signs with its own secret; the body's `t` names the tenant (absent: main). */
  private readonly hooks = new Map<string, Webhook>();
  private readonly open = new Set<ServerResponse>();

  constructor(
    private readonly history: HistoryWriter,
    /** How long a "hang" holds the request: past the worker's webhook timeout. */
    private readonly hangMs: number,
  ) {}

  /** Signature checks start once the tenant's secret is known (it is read from the API). */
  useSecret(tenant: string, secret: string): void {
    this.hooks.set(tenant, new Webhook(secret));
  }

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.keepAliveTimeout = 1_000;
    await new Promise<void>((done) => this.server!.listen(0, "127.0.0.1", done));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  async stop(): Promise<void> {
    for (const res of this.open) res.destroy();
    await new Promise<void>((done) => (this.server ? this.server.close(() => done()) : done()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const at = Date.now();
    let raw = "";
    for await (const chunk of req) raw += chunk;
    let body: { k?: string; v?: number; t?: string; b?: Behaviour } = {};
    try {
      body = JSON.parse(raw) as typeof body;
    } catch {
      // Recorded below with version 0: a body the client never sent.
    }
    const attempt = Number(req.headers["hourglass-attempt"] ?? 0);
    const id = String(req.headers["webhook-id"] ?? body.k ?? "");
    let signatureOk = false;
    const hook = this.hooks.get(body.t ?? "main");
    try {
      hook?.verify(raw, req.headers as Record<string, string>);
      signatureOk = hook !== undefined;
    } catch {
      signatureOk = false;
    }
    const b = body.b ?? {};
    const record = { kind: "arrival" as const, id, attempt, at, version: body.v ?? 0, signatureOk };
    if (b.hang === attempt) {
      // Answered too late to count: the worker has given up (timeout) before this 200.
      this.history.write({ ...record, answer: 0 });
      this.open.add(res);
      setTimeout(() => {
        this.open.delete(res);
        if (!res.destroyed) res.writeHead(200).end();
      }, this.hangMs).unref();
      return;
    }
    const answer = b.gone ? 410 : b.fail !== undefined && attempt <= b.fail ? 503 : 200;
    if (answer === 200 && b.slowMs) await new Promise((done) => setTimeout(done, b.slowMs));
    res.writeHead(answer).end();
    this.history.write({ ...record, answer, answeredAt: Date.now() });
  }
}
