import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const root = new URL("../../", import.meta.url);
const pkg = JSON.parse(readFileSync(new URL("package.json", root), "utf8")) as {
  scarfSettings?: { enabled?: boolean };
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const lock = JSON.parse(readFileSync(new URL("package-lock.json", root), "utf8")) as {
  packages: Record<string, { version?: string }>;
};

describe("supply chain", () => {
  it("turns off @scarf/scarf's install-time telemetry (pulled in by swagger-ui-dist)", () => {
    expect(pkg.scarfSettings?.enabled).toBe(false);
  });

  it("installs one copy of each AWS SDK and Smithy package, so every client runs on one core", () => {
    const versions = new Map<string, Set<string>>();
    for (const [path, entry] of Object.entries(lock.packages)) {
      const name = path.replace(/^.*node_modules\//, "");
      if (!/^@(aws-sdk|smithy)\//.test(name) || !entry.version) continue;
      versions.set(name, (versions.get(name) ?? new Set()).add(entry.version));
    }
    const duplicated = [...versions].filter(([, set]) => set.size > 1).map(([name]) => name);
    expect(duplicated).toEqual([]);
    expect(versions.get("@aws-sdk/core")?.size).toBe(1);
  });

  it("pins every runtime dependency exactly", () => {
    const ranges = Object.entries(pkg.dependencies).filter(([, v]) => !/^\d+\.\d+\.\d+$/.test(v));
    expect(ranges).toEqual([]);
  });

  it("keeps build and test tools out of the runtime dependencies", () => {
    for (const tool of ["esbuild", "typescript", "vitest", "aws-cdk", "aws-cdk-lib", "@biomejs/biome"])
      expect(pkg.dependencies[tool]).toBeUndefined();
  });
});
