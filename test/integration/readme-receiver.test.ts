import { spawn } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { deriveTenantSecret, signatureHeaders, tenantSecrets } from "../../shared/handlers/signing.ts";
import { freePort } from "../support/redis-servers.ts";

const root = new URL("../../", import.meta.url);

describe("the README's webhook receiver", () => {
  it("is about ten lines and accepts a genuine webhook, refusing a tampered one", async () => {
    const readme = readFileSync(new URL("README.md", root), "utf8");
    const snippet = /```js\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(snippet).toBeDefined();
    expect(snippet!.trim().split("\n").length).toBeLessThanOrEqual(14);
    const port = await freePort();
    // Beside the repository's node_modules, so `standardwebhooks` resolves as it would for a user.
    const file = new URL(`.hourglass/receiver-${port}.mjs`, root);
    writeFileSync(file, snippet!.replace("listen(8080)", `listen(${port}, "127.0.0.1")`));
    const master = "readme-master-secret-0123456789";
    const child = spawn(process.execPath, [file.pathname], {
      env: { ...process.env, WEBHOOK_SECRET: deriveTenantSecret(master, "acme", 0) },
      stdio: "ignore",
    });
    try {
      const send = async (body: string, signedBody: string, tenant = "acme") => {
        const headers = signatureHeaders(
          tenantSecrets(master, tenant, { generation: 0 }, Date.now()),
          "evt-1",
          new Date(),
          signedBody,
        );
        for (let i = 0; ; i++) {
          try {
            return (await fetch(`http://127.0.0.1:${port}/`, { method: "POST", headers, body })).status;
          } catch (error) {
            if (i > 50) throw error;
            await sleep(100);
          }
        }
      };
      expect(await send('{"a":1}', '{"a":1}')).toBe(204);
      expect(await send('{"a":2}', '{"a":1}')).toBe(401);
      expect(await send('{"a":1}', '{"a":1}', "globex")).toBe(401);
    } finally {
      child.kill();
      rmSync(file, { force: true });
    }
  });
});
