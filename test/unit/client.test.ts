import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HourglassApiError, HourglassClient } from "../../shared/client/client.ts";

/** The client's own behaviour, against a scripted HTTP server: retries, ids, signing, paging. */
let server: Server;
let base: string;
let script: { status: number; body: unknown }[] = [];
const seen: { method: string; url: string; headers: IncomingHttpHeaders; body: string }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => {
      body += c;
    });
    req.on("end", () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      const next = script.shift() ?? { status: 500, body: { title: "unscripted" } };
      const problem = next.status >= 400;
      res.writeHead(next.status, {
        "content-type": problem ? "application/problem+json" : "application/json",
      });
      res.end(JSON.stringify(next.body));
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => {
  server.close();
});

const event = {
  id: "e1",
  type: "t",
  status: "scheduled",
  runAt: "2027-01-01T00:00:00.000Z",
  attempts: 0,
  maxAttempts: 5,
  payload: null,
  createdAt: "2026-01-01T00:00:00.000Z",
  updatedAt: "2026-01-01T00:00:00.000Z",
};

describe("HourglassClient", () => {
  it("retries 503 and 429 with the same generated id, so a retry cannot create a second event", async () => {
    seen.length = 0;
    script = [
      { status: 503, body: { title: "down", status: 503 } },
      { status: 429, body: { title: "slow down", status: 429 } },
      { status: 201, body: event },
    ];
    const client = new HourglassClient({ url: base, retries: 3, token: "secret-token-123456" });
    const result = await client.schedule({ type: "t", delaySeconds: 60 });
    expect(result.id).toBe("e1");
    expect(seen).toHaveLength(3);
    const ids = seen.map((s) => JSON.parse(s.body).id);
    expect(new Set(ids).size).toBe(1);
    expect(ids[0]).toMatch(/^[0-9A-Z]{26}$/);
    expect(seen[0]!.headers.authorization).toBe("Bearer secret-token-123456");
  });

  it("does not retry a 4xx, and surfaces the problem document", async () => {
    seen.length = 0;
    script = [
      {
        status: 422,
        body: {
          type: "urn:x",
          title: "The request breaks a rule",
          status: 422,
          errors: [{ path: "runAt", message: "bad" }],
        },
      },
    ];
    const error = await new HourglassClient({ url: base }).schedule({ type: "t" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HourglassApiError);
    expect((error as HourglassApiError).status).toBe(422);
    expect((error as HourglassApiError).problem.errors?.[0]?.path).toBe("runAt");
    expect(seen).toHaveLength(1);
  });

  it("walks every page of a list", async () => {
    seen.length = 0;
    script = [
      { status: 200, body: { events: [event, { ...event, id: "e2" }], cursor: "c1" } },
      { status: 200, body: { events: [{ ...event, id: "e3" }] } },
    ];
    const ids: string[] = [];
    for await (const e of new HourglassClient({ url: base }).listAll({ status: "scheduled", limit: 2 }))
      ids.push(e.id);
    expect(ids).toEqual(["e1", "e2", "e3"]);
    expect(seen[1]!.url).toBe("/v1/events?status=scheduled&limit=2&cursor=c1");
  });

  it("signs with SigV4 from the credential chain when asked", async () => {
    const saved = { ...process.env };
    Object.assign(process.env, {
      AWS_ACCESS_KEY_ID: "AKIDEXAMPLE",
      AWS_SECRET_ACCESS_KEY: "secret",
      AWS_REGION: "eu-west-1",
    });
    try {
      seen.length = 0;
      script = [{ status: 200, body: event }];
      await new HourglassClient({ url: base, sigv4: true }).get("e1");
      const authorization = String(seen[0]!.headers.authorization);
      expect(authorization).toMatch(
        /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/execute-api\/aws4_request/,
      );
      expect(seen[0]!.headers["x-amz-date"]).toMatch(/^\d{8}T\d{6}Z$/);
    } finally {
      process.env = saved;
    }
  });
});
