#!/usr/bin/env node
// Makes a fresh clone runnable: installs npm dependencies when they are missing or stale, and the
// system packages the embedded stack needs when this user can (root with apt-get). Node builtins
// only, since it runs before node_modules exists.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";

const run = (command, args) => execFileSync(command, args, { stdio: "inherit" });
const has = (command) => !spawnSync(command, ["--version"], { stdio: "ignore" }).error;

const lock = "package-lock.json";
const marker = "node_modules/.package-lock.json";
if (!existsSync(marker) || statSync(lock).mtimeMs > statSync(marker).mtimeMs) {
  console.log("[hourglass] installing npm dependencies (npm ci)");
  run("npm", ["ci", "--no-audit", "--no-fund"]);
}

const remote =
  process.env.HOURGLASS_REDIS_URL && !/127\.0\.0\.1|localhost/.test(process.env.HOURGLASS_REDIS_URL);
if (!remote && !has("redis-server")) {
  if (process.getuid?.() === 0 && has("apt-get")) {
    console.log("[hourglass] installing redis-server with apt-get");
    run("apt-get", ["update", "-qq"]);
    run("apt-get", ["install", "-y", "-qq", "redis-server", "redis-tools"]);
  } else {
    console.error(
      "[hourglass] redis-server is missing: install it (apt-get install redis-server) or set HOURGLASS_REDIS_URL",
    );
    process.exit(1);
  }
}

if (!process.env.AWS_ENDPOINT_URL_DYNAMODB && spawnSync("java", ["-version"], { stdio: "ignore" }).error) {
  console.error(
    "[hourglass] java is missing: DynamoDB Local needs Java 17 or newer (apt-get install openjdk-17-jre-headless), " +
      "or set AWS_ENDPOINT_URL_DYNAMODB to a DynamoDB you run",
  );
  process.exit(1);
}
