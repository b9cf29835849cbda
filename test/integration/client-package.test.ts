import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { recorder } from "../support/recorder.ts";
import { useApiServer } from "../support/server.ts";

/**
 * The typed client as another project gets it: `npm pack` of packages/client, the tarball installed
 * offline into a scratch project outside this repository, and that project calling a real server.
 */
const run = promisify(execFile);
const root = new URL("../../", import.meta.url);
const pkg = new URL("packages/client/", root);
const rec = recorder();
const served = useApiServer({}, { handlers: [rec.handler] });
const scratch = mkdtempSync(join(tmpdir(), "hg-client-pkg-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** What a module may import: its own package's files, Node's, the two it bundles, the optional peers. */
const ALLOWED =
  /^(\.\/[a-z0-9-]+\.js|node:.*|ky|ulid|@aws-sdk\/(credential-provider-node|client-cloudformation)|@smithy\/(signature-v4|hash-node))$/;

/** A child's environment without this test runner's loaders, as a shell in another project has. */
function plainEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const key of ["NODE_OPTIONS", "VITEST", "VITEST_POOL_ID", "VITEST_WORKER_ID"]) delete env[key];
  return env;
}

describe("@hourglass/client, packed and installed", { timeout: 240_000 }, () => {
  it("holds no server code: its sources import only each other, Node, ky, ulid and the SigV4 peers", () => {
    const manifest = JSON.parse(readFileSync(new URL("package.json", pkg), "utf8"));
    expect(manifest).toMatchObject({ name: "@hourglass/client", type: "module", types: "./dist/index.d.ts" });
    expect(manifest.dependencies ?? {}).toEqual({});
    const src = new URL("src/", pkg);
    let seen = 0;
    for (const file of readdirSync(src)) {
      const text = readFileSync(new URL(file, src), "utf8");
      const specifiers = [...text.matchAll(/(?:from|import\()\s*"([^"]+)"/g)].map((m) => m[1]!);
      for (const specifier of specifiers)
        expect(ALLOWED.test(specifier), `${file} imports ${specifier}`).toBe(true);
      seen += specifiers.length;
    }
    expect(seen).toBeGreaterThan(5);
  });

  it("packs, installs offline into a scratch project, type-checks there, and calls a real server", async () => {
    const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", scratch], {
      cwd: pkg.pathname,
      env: plainEnv(),
    });
    const [packed] = JSON.parse(stdout.slice(stdout.indexOf("["))) as {
      filename: string;
      files: { path: string }[];
    }[];
    const files = packed!.files.map((f) => f.path).sort();
    expect(files).toEqual(expect.arrayContaining(["dist/index.js", "dist/index.d.ts", "package.json"]));
    expect(files.filter((f) => !/^(dist\/|package\.json$|README|LICENSE)/.test(f))).toEqual([]);

    const project = join(scratch, "project");
    await run("mkdir", ["-p", project]);
    writeFileSync(
      join(project, "package.json"),
      JSON.stringify({ name: "scratch", private: true, type: "module" }),
    );
    await run("npm", ["install", join(scratch, packed!.filename), "--offline", "--no-audit", "--no-fund"], {
      cwd: project,
      env: plainEnv(),
    });
    // Nothing else came with it: no dependencies, and the optional SigV4 peers are left out.
    const installed = readdirSync(join(project, "node_modules")).filter((name) => !name.startsWith("."));
    expect(installed).toEqual(["@hourglass"]);

    writeFileSync(
      join(project, "main.ts"),
      `import { HourglassApiError, HourglassClient, SigV4UnavailableError, type EventBody, type ScheduledEventBody } from "@hourglass/client";
declare const process: { argv: string[] }; // no @types/node in this project
const client = new HourglassClient({ url: process.argv[2]!, retries: 0 });
const created: ScheduledEventBody = await client.schedule({ type: "test.record", delaySeconds: 3600, payload: { label: "pkg" } });
const read: EventBody = await client.get(created.id);
const listed: EventBody[] = [];
for await (const event of client.listAll({ type: "test.record" })) listed.push(event);
const cancelled = await client.cancel(created.id);
let refused: { status: number; paths: string[] } | undefined;
try {
  await client.schedule({ type: "test.record", runAt: "2026-12-06T10:00:00" });
} catch (error) {
  if (!(error instanceof HourglassApiError)) throw error;
  refused = { status: error.status, paths: (error.problem.errors ?? []).map((e) => e.path) };
}
// SigV4's packages are optional peers, not installed here: a signed call says which to install.
let unsigned = "";
try {
  await new HourglassClient({ url: process.argv[2]!, sigv4: { region: "us-east-1" }, retries: 0 }).stats();
} catch (error) {
  if (!(error instanceof SigV4UnavailableError)) throw error;
  unsigned = error.message;
}
console.log(JSON.stringify({ created, read, listed: listed.map((e) => e.id), cancelled: cancelled.status, refused, unsigned }));
`,
    );
    // The scratch project builds with TypeScript against the package's declarations, then runs.
    writeFileSync(
      join(project, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noUncheckedIndexedAccess: true,
          target: "es2022",
          module: "nodenext",
          moduleResolution: "nodenext",
          lib: ["es2023", "dom"],
          types: [],
          outDir: "out",
        },
        files: ["main.ts"],
      }),
    );
    await run(process.execPath, [join(root.pathname, "node_modules/typescript/bin/tsc"), "-p", "."], {
      cwd: project,
      env: plainEnv(),
    }).catch((error: { stdout: string }) => {
      throw new Error(`the scratch project does not type-check:\n${error.stdout}`);
    });
    const result = await run(process.execPath, ["out/main.js", served.api.base], {
      cwd: project,
      env: plainEnv(),
    });
    const out = JSON.parse(result.stdout);
    expect(out.created).toMatchObject({ type: "test.record", status: "scheduled" });
    expect(out.read).toMatchObject({ id: out.created.id, status: "scheduled", payload: { label: "pkg" } });
    expect(out.listed).toContain(out.created.id);
    expect(out.cancelled).toBe("cancelled");
    expect(out.refused).toEqual({ status: 422, paths: ["runAt"] });
    expect(out.unsigned).toContain(
      "npm install @aws-sdk/credential-provider-node @smithy/signature-v4 @smithy/hash-node",
    );
    // The server agrees: the event the scratch project created is cancelled there.
    expect((await served.api.call("GET", `/v1/events/${out.created.id}`)).json.status).toBe("cancelled");
  });
});
