import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Webhook } from "standardwebhooks";
import { afterAll, describe, expect, it } from "vitest";
import { deriveTenantSecret } from "../../shared/handlers/signing.ts";
import { WEBHOOK_SECRET_FILE } from "../../shared/webhook-secret.ts";
import { freePorts } from "../support/redis-servers.ts";

/** The constant local mode signed with before issue 33: public, in the source. */
const OLD_CONSTANT_MASTER = "hourglass-local-development-secret";
const TOKEN = "token-acme-0123456789";

let npm: ChildProcess | undefined;
let receiver: Server | undefined;
const dataDir = mkdtempSync(join(tmpdir(), "hg-start-secret-"));
afterAll(async () => {
  receiver?.close();
  if (npm?.pid && npm.exitCode === null) {
    const exited = new Promise((done) => npm!.once("exit", done));
    process.kill(-npm.pid, "SIGINT");
    await Promise.race([exited, sleep(30_000)]);
  }
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

// `npm start` signs in worker processes of its own; the key it hands out is the API process's.
describe("npm start with tokens (issue 33, finding 9)", { timeout: 240_000 }, () => {
  it("signs webhooks in its worker processes with the data dir's secret, the one the API hands out", async () => {
    const [http, redis, dynamodb, sqs, hook] = (await freePorts(5)) as [
      number,
      number,
      number,
      number,
      number,
    ];
    const received: { headers: IncomingHttpHeaders; body: string }[] = [];
    receiver = createServer((request, response) => {
      let body = "";
      request.on("data", (chunk: Buffer) => {
        body += chunk.toString();
      });
      request.on("end", () => {
        received.push({ headers: request.headers, body });
        response.end("ok");
      });
    });
    await new Promise<void>((resolve) => receiver!.listen(hook, "127.0.0.1", resolve));

    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: String(http),
      HOURGLASS_REDIS_URL: `redis://127.0.0.1:${redis}`,
      HOURGLASS_DYNAMODB_PORT: String(dynamodb),
      HOURGLASS_SQS_PORT: String(sqs),
      HOURGLASS_DATA_DIR: dataDir,
      HOURGLASS_API_TOKENS: `acme:${TOKEN}`,
      HOURGLASS_WEBHOOK_ALLOW_PRIVATE: "true", // the receiver is on loopback
      HOURGLASS_LOCAL_WORKERS: "1",
    };
    for (const key of [
      "AWS_ENDPOINT_URL",
      "AWS_ENDPOINT_URL_DYNAMODB",
      "AWS_ENDPOINT_URL_SQS",
      "HOURGLASS_WEBHOOK_SECRET",
    ])
      delete env[key];
    delete env.NODE_OPTIONS;
    delete env.VITEST;
    let output = "";
    npm = spawn("npm", ["start"], { detached: true, stdio: ["ignore", "pipe", "pipe"], env });
    npm.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    npm.stderr!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    const deadline = Date.now() + 180_000;
    while (!output.includes("Hourglass is running")) {
      if (npm.exitCode !== null || Date.now() > deadline)
        throw new Error(`npm start did not come up:\n${output}`);
      await sleep(250);
    }

    const api = `http://127.0.0.1:${http}`;
    const auth = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
    const { secret } = (await (await fetch(`${api}/v1/webhook-secret`, { headers: auth })).json()) as {
      secret: string;
    };
    expect(secret).not.toBe(deriveTenantSecret(OLD_CONSTANT_MASTER, "acme", 0));
    expect(statSync(join(dataDir, WEBHOOK_SECRET_FILE)).mode & 0o777).toBe(0o600);

    const created = await fetch(`${api}/v1/events`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({
        type: "webhook",
        delaySeconds: 1,
        payload: { url: `http://127.0.0.1:${hook}/hook`, body: { hello: "acme" } },
      }),
    });
    expect(created.status).toBe(201);
    while (received.length === 0) {
      if (Date.now() > deadline + 30_000) throw new Error(`no webhook arrived:\n${output}`);
      await sleep(100);
    }
    const [delivery] = received;
    const headers = Object.fromEntries(
      Object.entries(delivery!.headers).map(([name, value]) => [name, String(value)]),
    );
    // Throws unless one of the signatures is the secret's: the worker process signed with it.
    expect(() => new Webhook(secret).verify(delivery!.body, headers)).not.toThrow();
  });
});
