#!/usr/bin/env node
// `npm run test:localstack`: deploys Hourglass to LocalStack (started by the test itself with
// @testcontainers/localstack) and runs a smoke test. It needs a Docker engine; without one it says
// so and exits non-zero, so a machine without Docker never reports a pass it did not earn.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

const socket =
  process.env.DOCKER_HOST ?? (existsSync("/var/run/docker.sock") ? "unix:///var/run/docker.sock" : "");
const probe = spawnSync("docker", ["info", "--format", "{{.ServerVersion}}"], { encoding: "utf8" });
if (!socket && probe.status !== 0) {
  process.stderr.write(
    "test:localstack: no Docker engine here (no DOCKER_HOST, no /var/run/docker.sock, `docker info` failed).\n" +
      "The LocalStack smoke test did NOT run. Run it on a machine with Docker; see docs/local.md.\n",
  );
  process.exit(2);
}
const result = spawnSync("npx", ["vitest", "run", "--config", "vitest.localstack.config.ts"], {
  stdio: "inherit",
});
process.exit(result.status ?? 1);
