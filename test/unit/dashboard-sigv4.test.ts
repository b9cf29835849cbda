import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serve } from "@hono/node-server";
import type { Hono } from "hono";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { GatewayRefusal } from "../../scripts/aws-shaped/api-gateway/errors.ts";
import { readRequest } from "../../scripts/aws-shaped/api-gateway/request.ts";
import { SignatureVerifier } from "../../scripts/aws-shaped/api-gateway/signature.ts";
import { readClaim } from "../../scripts/aws-shaped/api-gateway/sigv4-claim.ts";
import { main } from "../../shared/cli/program.ts";
import {
  regionOfExecuteApiUrl,
  resolveSigningRegion,
  SigningRegionError,
} from "../../shared/client/signing-region.ts";
import { sigV4Signer } from "../../shared/client/sigv4.ts";
import { dashboardProxy } from "../../shared/dashboard/proxy.ts";

// `hourglass dashboard --sigv4` end to end, short of AWS: the loopback proxy signs the page's calls,
// and a server checks each signature with the AWS-shaped API Gateway's verifier, which recomputes it
// over the request as received (exact: any difference in region, query or headers is a 403).
const REGION = "eu-west-1";
const KEY = { id: "AKIDDASHBOARD", secret: "dashboard-secret", arn: "arn:aws:iam::000000000000:user/ops" };
const verifier = new SignatureVerifier(
  REGION,
  "000000000000",
  new Map([[KEY.id, { secretAccessKey: KEY.secret, arn: KEY.arn }]]),
);
const CLI = join(import.meta.dirname, "..", "..", "scripts", "hourglass.mjs");
const closers: (() => void)[] = [];
let api = "";

beforeAll(async () => {
  const server = createServer(async (req, res) => {
    const request = await readRequest(req);
    try {
      const claim = readClaim(request);
      if (!claim) throw new Error("unsigned");
      const caller = await verifier.verify(request, claim, new Date());
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ caller: caller.userArn ?? caller, rawQuery: request.rawQuery }));
    } catch (error) {
      const body = error instanceof GatewayRefusal ? error.reply.body : String(error);
      res.writeHead(403, { "content-type": "application/json" }).end(JSON.stringify({ refused: body }));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => server.close());
  api = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
});
afterAll(() => {
  for (const close of closers) close();
});

const saved = { ...process.env };
afterEach(() => {
  process.env = { ...saved };
});
/** Credentials from the environment, and exactly the region variables given. */
function environment(region: Record<string, string>) {
  for (const name of ["AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_CONFIG_FILE"])
    delete process.env[name];
  const empty = join(mkdtempSync(join(tmpdir(), "hg-sigv4-")), "empty");
  writeFileSync(empty, "");
  Object.assign(process.env, {
    AWS_ACCESS_KEY_ID: KEY.id,
    AWS_SECRET_ACCESS_KEY: KEY.secret,
    AWS_SESSION_TOKEN: "",
    // No file of the machine's own may supply a region.
    AWS_CONFIG_FILE: empty,
    AWS_SHARED_CREDENTIALS_FILE: empty,
    ...region,
  });
  delete process.env.AWS_SESSION_TOKEN;
}

/** The proxy as `hourglass dashboard --sigv4` runs it, with the signer the command builds. */
async function dashboard(explicitRegion?: string): Promise<string> {
  const sign = sigV4Signer({ region: await resolveSigningRegion(api, explicitRegion) });
  let app: Hono | undefined;
  const server = serve({ fetch: (r) => app!.fetch(r), port: 0, hostname: "127.0.0.1" });
  await new Promise((resolve) => server.once("listening", resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  app = dashboardProxy({ target: api, origin, sign });
  closers.push(() => server.close());
  return origin;
}

/** `hourglass --sigv4 --url <api> dashboard --port 0` in a child process; the status of one proxied call. */
async function throughCli(path: string): Promise<number> {
  const child = spawn(process.execPath, [CLI, "--sigv4", "--url", api, "dashboard", "--port", "0"], {
    env: process.env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  try {
    let output = "";
    const origin = await new Promise<string>((resolve, reject) => {
      child.stdout.on("data", (chunk: Buffer) => {
        output += chunk;
        const match = /(http:\/\/127\.0\.0\.1:\d+)\/dashboard/.exec(output);
        if (match) resolve(match[1]!);
      });
      child.stderr.on("data", (chunk: Buffer) => {
        output += chunk;
      });
      child.once("exit", (code) => reject(new Error(`hourglass dashboard exited ${code}: ${output}`)));
    });
    return (await fetch(`${origin}${path}`)).status;
  } finally {
    child.kill("SIGTERM");
  }
}

describe("hourglass dashboard --sigv4", () => {
  it("signs repeated query keys as sent, in any order, and the verifier accepts them", async () => {
    environment({ AWS_REGION: REGION });
    const origin = await dashboard();
    for (const query of ["tag=a&tag=b&status=scheduled", "tag=b&tag=a", "tag=a%20b&tag=a&limit=2"]) {
      const response = await fetch(`${origin}/v1/events?${query}`);
      const body = (await response.json()) as { caller?: string; rawQuery?: string; refused?: string };
      expect(body.refused, query).toBeUndefined();
      expect(response.status, query).toBe(200);
      expect(body.rawQuery).toBe(query);
    }
  });

  it("finds the region in AWS_DEFAULT_REGION, and in the profile's config, without AWS_REGION", async () => {
    environment({ AWS_DEFAULT_REGION: REGION });
    expect((await fetch(`${await dashboard()}/v1/stats`)).status).toBe(200);

    const config = join(mkdtempSync(join(tmpdir(), "hg-profile-")), "config");
    writeFileSync(
      config,
      `[default]\nregion = us-east-1\n\n[profile ops]\nregion = ${REGION}\n` +
        `aws_access_key_id = ${KEY.id}\naws_secret_access_key = ${KEY.secret}\n`,
    );
    environment({ AWS_CONFIG_FILE: config, AWS_PROFILE: "ops" });
    // With AWS_PROFILE the SDK takes the profile's credentials, not the environment's.
    delete process.env.AWS_ACCESS_KEY_ID;
    delete process.env.AWS_SECRET_ACCESS_KEY;
    expect(await resolveSigningRegion(api)).toBe(REGION);
    // The signer alone, as `new HourglassClient({ url, sigv4: true })` builds it: no region given.
    const signed = await sigV4Signer()(new Request(`${api}/v1/events?tag=a&tag=b`));
    expect((await fetch(signed)).status).toBe(200);
    // And the command itself, in its own process: it prints the page's address, then serves it.
    expect(await throughCli(`/v1/events?tag=a&tag=b`)).toBe(200);
  });

  it("takes an execute-api URL's region over the environment's", async () => {
    environment({ AWS_REGION: "us-east-1" });
    const url = "https://abc123defg.execute-api.eu-west-1.amazonaws.com/api";
    expect(regionOfExecuteApiUrl(url)).toBe(REGION);
    expect(await resolveSigningRegion(url)).toBe(REGION);
    expect(await resolveSigningRegion(url, "ap-south-1")).toBe("ap-south-1");
    // The signer scopes a request to such an API to the API's region, whatever AWS_REGION says.
    const scoped = await sigV4Signer()(new Request(`${url}/v1/stats`));
    expect(scoped.headers.get("authorization")).toMatch(
      /Credential=AKIDDASHBOARD\/\d{8}\/eu-west-1\/execute-api\//,
    );
    expect(
      regionOfExecuteApiUrl("https://abc-vpce-0a1b2c.execute-api.us-gov-west-1.vpce.amazonaws.com/x"),
    ).toBe("us-gov-west-1");
    expect(
      regionOfExecuteApiUrl("https://api.example.com/execute-api.eu-west-1.amazonaws.com"),
    ).toBeUndefined();
    // The wrong region is what the verifier refuses: the same call signed for the environment's.
    const wrong = await fetch(await sigV4Signer({ region: "us-east-1" })(new Request(`${api}/v1/stats`)));
    expect(wrong.status).toBe(403);
  });

  it("says which variables to set when no region is found, before serving anything", async () => {
    environment({});
    await expect(resolveSigningRegion(api)).rejects.toThrow(SigningRegionError);
    await expect(resolveSigningRegion(api)).rejects.toThrow(/AWS_REGION.*AWS_DEFAULT_REGION.*AWS_PROFILE/);
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    try {
      await main(["node", "hourglass", "--sigv4", "--url", api, "dashboard", "--port", "0"]);
      expect(String(stderr.mock.calls.map((c) => c[0]).join(""))).toMatch(/--region.*AWS_REGION/);
      expect(process.exitCode).toBe(2);
    } finally {
      stderr.mockRestore();
      process.exitCode = undefined;
    }
  });
});
