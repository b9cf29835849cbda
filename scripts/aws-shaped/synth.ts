import { execFile } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";

export type Profile = "standard" | "lean";

export interface SynthOptions {
  readonly profile: Profile;
  /** Extra `-c name=value` context, as a user would pass to `cdk deploy`. */
  readonly context?: Readonly<Record<string, string>>;
  /** Where cdk.out goes. */
  readonly outDir: string;
}

const ROOT = resolve(import.meta.dirname, "..", "..");

/**
 * `cdk synth` of the project's own app, as `cdk deploy` would run it: the same CLI, the same
 * esbuild bundles, the same cdk-nag checks. Offline (no telemetry, notices or version check).
 * Returns the cdk.out folder and the stack's artifact name.
 */
export async function synthesize(options: SynthOptions): Promise<{ cdkOut: string; stackName: string }> {
  const outDir = resolve(options.outDir);
  mkdirSync(outDir, { recursive: true });
  const context: Record<string, string> = {
    ...(options.profile === "lean" && { profile: "lean" }),
    ...options.context,
  };
  const args = ["cdk", "synth", "--no-notices", "--quiet", "--no-version-reporting", "-o", outDir];
  for (const [name, value] of Object.entries(context)) args.push("-c", `${name}=${value}`);
  await promisify(execFile)("npx", args, {
    cwd: ROOT,
    env: { ...process.env, CDK_DISABLE_CLI_TELEMETRY: "1", CDK_DISABLE_VERSION_CHECK: "1" },
    timeout: 240_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  return { cdkOut: outDir, stackName: context.stackName ?? "Hourglass" };
}

export function defaultOutDir(dataDir: string, profile: Profile): string {
  return join(dataDir, profile, "cdk.out");
}
