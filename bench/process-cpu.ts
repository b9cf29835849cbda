import { readdirSync, readFileSync } from "node:fs";

/**
 * CPU time (ms, user + system) of the DynamoDB Local process listening on `port`, from /proc, or
 * undefined where /proc is not there. CPU time, unlike wall time, hardly moves with the machine's
 * load, so per-item figures stay comparable across runs.
 */
export function dynamoLocalCpuMs(port: number): number | undefined {
  const pids = pidsOf("DynamoDBLocal.jar", `-port\0${port}\0`);
  return pids.length === 0 ? undefined : cpuMsOfPids(pids);
}

/** This process's CPU time so far, ms. */
export function ownCpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** Pids of the processes whose command line contains every one of `parts`. */
export function pidsOf(...parts: string[]): number[] {
  try {
    return readdirSync("/proc")
      .filter((p) => /^\d+$/.test(p))
      .filter((p) => {
        try {
          const cmdline = readFileSync(`/proc/${p}/cmdline`, "utf8");
          return parts.every((part) => cmdline.includes(part));
        } catch {
          return false;
        }
      })
      .map(Number);
  } catch {
    return [];
  }
}

/** CPU time (ms, user + system) of `pids` so far; a pid gone counts 0. */
export function cpuMsOfPids(pids: readonly number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // Exited.
    }
  }
  return ticks * 10;
}
