import { spawn } from "node:child_process";
import { appendFileSync, writeFileSync } from "node:fs";
import type { Socket } from "node:net";

/**
 * Ends the execution environments if the harness dies without stopping them (kill -9, a killed test
 * worker). A frozen environment (SIGSTOP) cannot notice its parent is gone, so something outside
 * it must: a small `sh` in its own process group holds a pipe from this process, and when the pipe
 * closes (the kernel closes it however this process ends) it sends SIGKILL, which a stopped process
 * still receives, to every pid listed in `pidFile`.
 */
export function startReaper(pidFile: string): { add(pid: number): void; stop(): void } {
  writeFileSync(pidFile, "");
  const script = 'read -r _ || true; [ -f "$1" ] && xargs -r kill -KILL < "$1" 2>/dev/null; rm -f "$1"';
  const child = spawn("sh", ["-c", script, "sh", pidFile], {
    stdio: ["pipe", "ignore", "ignore"],
    detached: true,
  });
  child.on("error", () => {});
  child.stdin?.on("error", () => {});
  child.unref();
  (child.stdin as Socket | null)?.unref();
  return {
    add: (pid) => appendFileSync(pidFile, `${pid}\n`),
    stop: () => child.stdin?.end(),
  };
}
