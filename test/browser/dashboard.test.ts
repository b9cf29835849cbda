import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { dashboardAssets } from "../../shared/dashboard/assets.ts";
import { defineHandler } from "../../shared/handlers/registry.ts";
import { type Runtime, startRuntime } from "../../shared/local/runtime.ts";
import { axeViolations, chromiumAvailable, launch, SCREENSHOTS, watchErrors } from "../support/browser.ts";
import { eventually } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";
import { useApiServer } from "../support/server.ts";

// Fails the first run of each event, then succeeds: a dead letter that a replay can bring home.
const failedOnce = new Set<string>();
const flaky = defineHandler("test.flaky", z.object({}), async (_payload, context) => {
  if (!failedOnce.has(context.id)) {
    failedOnce.add(context.id);
    throw new Error("the downstream service answered 503");
  }
});
const rec = recorder();

const inCi = Boolean(process.env.CI);
if (!chromiumAvailable() && !inCi)
  console.warn("[browser tests] skipped: /usr/bin/chromium is missing (apt-get install -y chromium)");

describe.skipIf(!chromiumAvailable() && !inCi)("the dashboard in a real browser", () => {
  const served = useApiServer({}, { handlers: [rec.handler, flaky] });
  let runtime: Runtime;
  let browser: Browser;
  const dead: string[] = [];

  beforeAll(async () => {
    runtime = startRuntime(served.hg, { tickMs: 100 });
    // Built once here, so the first page load does not pay for the bundle.
    await dashboardAssets();
    browser = await launch();
    const { api, hg } = served;
    const schedule = async (body: Record<string, unknown>) => {
      const response = await api.call("POST", "/v1/events", body);
      expect(response.status).toBe(201);
      return response.json.id as string;
    };
    // Work spread over the coming week, of three types, so the timeline has something to stack.
    for (let i = 0; i < 24; i++)
      await schedule({ type: "test.record", delaySeconds: 300 + i * 1_700, payload: { label: `r${i}` } });
    for (let i = 0; i < 8; i++)
      await schedule({
        type: "webhook",
        delaySeconds: 3_600 * (i + 2),
        payload: { url: "http://127.0.0.1:9/h" },
      });
    for (let i = 0; i < 6; i++) await schedule({ type: "test.record", delaySeconds: 1, payload: {} });
    for (let i = 0; i < 3; i++)
      dead.push(await schedule({ type: "test.flaky", delaySeconds: 1, maxAttempts: 1, payload: {} }));
    await eventually(async () => {
      for (const id of dead) if ((await hg.events.get("default", id)).status !== "dead") return undefined;
      return true;
    });
    await hg.metrics.flush();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await runtime?.stop();
  });

  // One page for the whole file: a new page costs seconds on a busy two-core machine, and moving
  // between views by their hash is what a person using the dashboard does anyway.
  let page: Page;
  let errors: string[];
  beforeAll(async () => {
    page = await browser.newPage({ viewport: { width: 1280, height: 900 }, colorScheme: "light" });
    errors = watchErrors(page);
    await page.goto(`${served.api.base}/dashboard#/`);
  }, 120_000);

  const shot = (name: string) => page.screenshot({ path: `${SCREENSHOTS}/${name}.png`, fullPage: true });

  const go = async (hash: string, ready: string, theme: "light" | "dark" = "light") => {
    await page.emulateMedia({ colorScheme: theme });
    await page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
    await page.locator(ready).first().waitFor({ timeout: 20_000 });
    await page.waitForTimeout(300); // let a chart draw and a second poll land
  };
  it("loads every view without a console error, and saves a screenshot of each", async () => {
    const views: [string, string, string][] = [
      ["overview", "#/", "[data-testid=count-scheduled]"],
      ["timeline", "#/timeline", ".chart canvas"],
      ["events", "#/events", "[data-testid=event-table]"],
      ["event", `#/events/${dead[0]}`, ".details"],
      ["dead-letters", "#/dead-letters", "[data-testid=event-table]"],
      ["leases", "#/leases", "main form"],
      ["stock", "#/stock", "main form"],
    ];
    for (const [name, hash, ready] of views) {
      errors.length = 0;
      await go(hash, ready);
      await shot(name);
      expect(errors, `${name}: console errors`).toEqual([]);
    }
    await go("#/", ".chart canvas", "dark");
    await shot("overview-dark");
    await go("#/dead-letters", "[data-testid=event-table]", "dark");
    await shot("dead-letters-dark");
    expect(errors).toEqual([]);
    // And a fresh load of a deep link, as from a bookmark.
    await page.goto(`${served.api.base}/dashboard#/timeline`);
    await page.locator(".chart canvas").first().waitFor({ timeout: 20_000 });
    expect(errors).toEqual([]);
  }, 180_000);

  it("shows the same counts as /v1/stats", async () => {
    await go("#/", "[data-testid=count-scheduled]");
    await eventually(async () => {
      const stats = (await served.api.call("GET", "/v1/stats")).json;
      for (const status of ["scheduled", "succeeded", "dead", "running", "retrying", "cancelled"]) {
        const shown = await page.locator(`[data-testid=count-${status}] .value`).textContent();
        if (Number(shown?.replace(/,/g, "")) !== (stats.byStatus[status] ?? 0)) return undefined;
      }
      return true;
    }, 10_000);
  }, 60_000);

  it("replays a dead letter from the page: after a confirmation it runs and leaves the list", async () => {
    errors.length = 0;
    await go("#/dead-letters", "[data-testid=event-table]");
    const row = page.locator(`tr[data-id="${dead[0]}"]`);
    await row.waitFor();
    await row.getByRole("button", { name: /Replay/ }).click();
    const dialog = page.getByRole("dialog");
    await expect(dialog.textContent()).resolves.toContain(dead[0]);
    await shot("dead-letters-confirm");
    await dialog.getByRole("button", { name: "Replay" }).click();
    await page.getByRole("status").filter({ hasText: "Replayed 1 event" }).waitFor();
    await row.waitFor({ state: "detached", timeout: 10_000 });
    await eventually(
      async () => (await served.hg.events.get("default", dead[0]!)).status === "succeeded" || undefined,
    );
    expect(errors).toEqual([]);
  }, 90_000);

  it("shows a new event within 2 s, without a reload", async () => {
    await go("#/events", "[data-testid=event-table]");
    const { json } = await served.api.call("POST", "/v1/events", {
      type: "test.record",
      delaySeconds: 3_600,
      payload: { label: "live" },
    });
    await page.locator(`tr[data-id="${json.id}"]`).waitFor({ timeout: 2_000 });
  }, 60_000);

  it("passes an automated accessibility check (axe-core, WCAG 2.1 A and AA), light and dark", async () => {
    for (const [hash, ready, theme] of [
      ["#/", ".chart canvas", "light"],
      ["#/", ".chart canvas", "dark"],
      ["#/timeline", ".chart canvas", "light"],
      ["#/events", "[data-testid=event-table]", "dark"],
      ["#/dead-letters", "[data-testid=event-table]", "light"],
      [`#/events/${dead[1]}`, ".details", "light"],
      ["#/leases", "main form", "dark"],
    ] as const) {
      await go(hash, ready, theme);
      expect(await axeViolations(page), `${hash} (${theme})`).toEqual([]);
    }
  }, 180_000);

  it("says what is wrong, in the page, for a malformed id, a missing event and a server that went away", async () => {
    await go("#/events", "[data-testid=event-table]");
    await page.getByLabel("Event id").fill("not an id!");
    await page.getByRole("button", { name: "Find" }).click();
    await expect(page.getByRole("alert").first().textContent()).resolves.toContain("is not an event id");

    // A schedule's occurrence id is an event id too: looked up, not refused.
    await go("#/events", "[data-testid=event-table]");
    await page.getByLabel("Event id").fill("nightly@2026-03-29T01:30:00Z~1.5f0c9a3e71b2");
    await page.getByRole("button", { name: "Find" }).click();
    await page.getByText("No event with id “nightly@2026-03-29T01:30:00Z~1.5f0c9a3e71b2”").waitFor();

    await go("#/events/no-such-event", "main h1");
    await page.getByText("No event with id “no-such-event”").waitFor();

    await go("#/", "[data-testid=count-scheduled]");
    await page.route("**/v1/**", (route) => route.abort("connectionrefused"));
    await page.getByText("The Hourglass server does not answer").waitFor({ timeout: 5_000 });
    await shot("server-gone");
    // The last figures stay on screen next to the message: never a blank page.
    await expect(page.locator("[data-testid=count-scheduled]").isVisible()).resolves.toBe(true);
    await page.unroute("**/v1/**");
  }, 60_000);
});
