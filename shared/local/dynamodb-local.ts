import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { LocalStackError } from "./errors.ts";

/**
 * AWS's DynamoDB Local ships inside this npm package. We take only its `emulator/` folder from the
 * tarball (64 MB) instead of installing the package (347 MB with an old CDK and TypeScript).
 */
const PACKAGE = "amplify-dynamodb-simulator@2.9.30";
const INTEGRITY =
  "sha512-xTeeRLvzEfqyd5lh3bH4c0kHvSHHmmhD5ZDsHFKAQ5g2Zl6JqlFdutaQhCLHzxEp6Ry1o7TB6niIoXuQAnSewQ==";

/** Returns the folder holding `DynamoDBLocal.jar`, fetching it from the npm registry on first use. */
export function ensureDynamoDbLocalJar(cacheDir: string): string {
  const home = join(cacheDir, "dynamodb-local-2.9.30");
  if (existsSync(join(home, "DynamoDBLocal.jar"))) return home;

  const work = join(cacheDir, `.fetch-${process.pid}`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  try {
    const packed = JSON.parse(
      execFileSync("npm", ["pack", PACKAGE, "--json", "--silent"], { cwd: work, encoding: "utf8" }),
    ) as { filename: string }[];
    const tarball = join(work, packed[0]!.filename);
    const digest = `sha512-${createHash("sha512").update(readFileSync(tarball)).digest("base64")}`;
    if (digest !== INTEGRITY) {
      throw new LocalStackError("dynamodb", `${PACKAGE} tarball failed its integrity check (${digest})`);
    }
    execFileSync("tar", ["-xzf", tarball, "-C", work, "package/emulator"]);
    renameSync(join(work, "package", "emulator"), home);
  } catch (error) {
    if (error instanceof LocalStackError) throw error;
    throw new LocalStackError(
      "dynamodb",
      `could not fetch DynamoDB Local from the npm registry (${PACKAGE}): ${(error as Error).message}`,
    );
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return home;
}

/**
 * The `java` arguments that run DynamoDB Local on `port`: through the loopback launcher (compiled
 * on first use, see `ensureLoopbackLauncher`), so it listens on 127.0.0.1 only, wherever a JDK can
 * build it; otherwise the jar itself, on every interface.
 */
export function dynamoDbLocalArgs(
  home: string,
  port: number,
  dbPath: string | undefined,
  launcher: string | undefined = ensureLoopbackLauncher(home),
): string[] {
  const jar = join(home, "DynamoDBLocal.jar");
  return [
    `-Djava.library.path=${join(home, "DynamoDBLocal_lib")}`,
    ...(launcher ? ["-cp", classPath(home, launcher), LAUNCHER_CLASS] : ["-jar", jar]),
    // Without -sharedDb every access key and region sees its own tables.
    "-sharedDb",
    "-disableTelemetry",
    "-port",
    String(port),
    ...(dbPath ? ["-dbPath", dbPath] : ["-inMemory"]),
  ];
}

const LAUNCHER_CLASS = "LoopbackDynamoDbLocal";
const LAUNCHER_SOURCE = fileURLToPath(new URL(`./${LAUNCHER_CLASS}.java`, import.meta.url));

function classPath(home: string, launcher: string): string {
  return [launcher, join(home, "DynamoDBLocal.jar"), join(home, "DynamoDBLocal_lib", "*")].join(delimiter);
}

/**
 * Compiles LoopbackDynamoDbLocal.java against the jar in `home`, once per version of the source,
 * into the cache folder beside it, and returns its folder; undefined where there is no `javac` (a JRE without the JDK),
 * and the caller then runs the jar as it is, on every interface, and says so. A compile that fails
 * where javac exists is an error: starting the jar open to the network instead would hide it.
 */
export function ensureLoopbackLauncher(home: string): string | undefined {
  const source = readFileSync(LAUNCHER_SOURCE);
  const version = createHash("sha256").update(source).digest("hex").slice(0, 12);
  const dir = join(dirname(home), `dynamodb-local-loopback-${version}`);
  if (existsSync(join(dir, `${LAUNCHER_CLASS}.class`))) return dir;
  if (spawnSync("javac", ["-version"]).error) return undefined;
  // Compiled into a folder of its own, then renamed into place: two stacks starting at once never
  // see a half-written class, and the loser's rename fails harmlessly.
  const work = `${dir}.${process.pid}.tmp`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  try {
    const compiled = spawnSync(
      "javac",
      ["-nowarn", "-cp", classPath(home, work), "-d", work, LAUNCHER_SOURCE],
      { encoding: "utf8" },
    );
    if (compiled.status !== 0) {
      throw new LocalStackError(
        "dynamodb",
        `could not compile the loopback launcher for DynamoDB Local: ${(compiled.stderr || compiled.stdout).trim()}`,
      );
    }
    try {
      renameSync(work, dir);
    } catch (error) {
      if (!existsSync(join(dir, `${LAUNCHER_CLASS}.class`))) throw error;
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return dir;
}
