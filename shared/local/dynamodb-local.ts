import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
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

export function dynamoDbLocalArgs(home: string, port: number, dbPath: string | undefined): string[] {
  return [
    `-Djava.library.path=${join(home, "DynamoDBLocal_lib")}`,
    "-jar",
    join(home, "DynamoDBLocal.jar"),
    // Without -sharedDb every access key and region sees its own tables.
    "-sharedDb",
    "-disableTelemetry",
    "-port",
    String(port),
    ...(dbPath ? ["-dbPath", dbPath] : ["-inMemory"]),
  ];
}
