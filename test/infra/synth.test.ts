import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";

it("`cdk synth` works offline with no AWS credentials and no Docker, bundling with the local esbuild", async () => {
  const out = mkdtempSync(join(tmpdir(), "hg-cdk-"));
  // No telemetry, no version check, no notices: the synth must not touch the network.
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    CDK_DISABLE_CLI_TELEMETRY: "1",
    CDK_DISABLE_VERSION_CHECK: "1",
  };
  for (const key of [
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_PROFILE",
    "AWS_ENDPOINT_URL_DYNAMODB",
    "AWS_ENDPOINT_URL_SQS",
  ]) {
    delete (env as Record<string, string | undefined>)[key];
  }
  await promisify(execFile)(
    "npx",
    ["cdk", "synth", "--no-notices", "--quiet", "--no-version-reporting", "-o", out],
    {
      env,
      timeout: 240_000,
    },
  );
  const manifest = JSON.parse(readFileSync(join(out, "manifest.json"), "utf8"));
  expect(Object.keys(manifest.artifacts)).toContain("Hourglass");
  const assets = JSON.parse(readFileSync(join(out, "Hourglass.assets.json"), "utf8"));
  expect(Object.keys(assets.files).length).toBeGreaterThanOrEqual(3);
  // bundleAwsSDK: the functions run on the SDK of package-lock.json, not on the runtime's copy.
  const bundles = Object.values(assets.files as Record<string, { source: { path: string } }>)
    .map((file) => join(out, file.source.path, "index.mjs"))
    .filter((path) => existsSync(path));
  expect(bundles.length).toBeGreaterThanOrEqual(3);
  for (const bundle of bundles) {
    expect(readFileSync(bundle, "utf8")).not.toMatch(/from\s*["']@aws-sdk\//);
    // A map for traces (file, line, name), without the sources themselves (SOURCE_MAPS).
    const map = JSON.parse(readFileSync(`${bundle}.map`, "utf8")) as {
      mappings: string;
      sourcesContent?: unknown;
    };
    expect(map.mappings.length).toBeGreaterThan(0);
    expect(map.sourcesContent).toBeUndefined();
  }
}, 270_000);
