import { existsSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { type Browser, chromium, type Page } from "playwright-core";

/** Debian's chromium (`apt-get install -y chromium`; .ci/run installs it). Root needs --no-sandbox. */
export const CHROMIUM = process.env.HOURGLASS_CHROMIUM ?? "/usr/bin/chromium";
export const SCREENSHOTS = ".hourglass/screenshots";

export function chromiumAvailable(): boolean {
  return existsSync(CHROMIUM);
}

export async function launch(): Promise<Browser> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  return chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
}

/** Console errors and uncaught exceptions of a page, collected as they happen. */
export function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text());
  });
  page.on("pageerror", (error) => errors.push(String(error)));
  return errors;
}

interface AxeResult {
  violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[];
}

/** Runs axe-core in the page against WCAG 2.x A and AA; returns the violations, readable. */
export async function axeViolations(page: Page): Promise<string[]> {
  const source = (createRequire(import.meta.url)("axe-core") as { source: string }).source;
  // Evaluated through the DevTools protocol, not added as a <script>: the page's CSP rightly refuses
  // inline scripts, and a test tool must not need the page to allow them.
  if (!(await page.evaluate(() => "axe" in globalThis))) await page.evaluate(source);
  const result = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(options: unknown): Promise<AxeResult> } }).axe;
    return axe.run({ runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] } });
  });
  return result.violations.map(
    (v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => JSON.stringify(n.target)).join(", ")}`,
  );
}
