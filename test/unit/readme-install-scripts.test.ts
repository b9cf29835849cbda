import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

/**
 * The README's install note names the packages whose install scripts npm warns about. They are
 * the lockfile's `hasInstallScript` entries; a dependency change that adds or removes one fails
 * here until the note says so.
 */
const root = new URL("../../", import.meta.url);
const NUMBERS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"];

describe("the README's install-scripts note", () => {
  it("names every package of the lockfile that has an install script, and counts them", () => {
    const lock = JSON.parse(readFileSync(new URL("package-lock.json", root), "utf8")) as {
      packages: Record<string, { hasInstallScript?: boolean }>;
    };
    const withScripts = new Set(
      Object.entries(lock.packages)
        .filter(([, entry]) => entry.hasInstallScript)
        .map(([path]) => path.replace(/^.*node_modules\//, "")),
    );
    const readme = readFileSync(new URL("README.md", root), "utf8");
    const start = readme.indexOf("npm warn install-scripts");
    expect(start).toBeGreaterThan(0);
    const note = readme.slice(start, readme.indexOf("\n## ", start));
    for (const name of withScripts) expect(note).toContain(`\`${name}\``);
    expect(note.replace(/\s+/g, " ")).toContain(`There are ${NUMBERS[withScripts.size]} `);
  });
});
