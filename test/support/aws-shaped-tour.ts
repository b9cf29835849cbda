import { expect } from "vitest";
import type { HourglassClient } from "../../shared/client/client.ts";
import { sigV4Signer } from "../../shared/client/sigv4.ts";
import type { WebhookReceiver } from "./webhook-receiver.ts";

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/**
 * Every kind of call a user makes once, through the deployed API: so the IAM check over the run sees
 * each AWS call the functions can make (leases, the ledger and its expiring holds, limits, schedules,
 * listings, dead letters and replay, batch creates without ids, health), not only the event paths.
 * Returns what later checks wait on.
 */
export async function tourEveryRoute(
  client: HourglassClient,
  baseUrl: string,
  region: string,
  receiver: WebhookReceiver,
): Promise<{ expiringHold: string; sku: string }> {
  const suffix = Date.now().toString(36);
  // Health asks DynamoDB to describe the events table.
  const signed = sigV4Signer({ region });
  const health = await fetch(await signed(new Request(new URL("health", baseUrl))));
  expect(health.status).toBe(200);

  // A batch without client ids is written with BatchWriteItem.
  const batch = await fetch(
    await signed(
      new Request(new URL("v1/events/batch", baseUrl), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          events: [1, 2].map((n) => ({
            type: "webhook",
            delaySeconds: 3_600,
            payload: { url: receiver.url(`/batch-${n}`) },
          })),
        }),
      }),
    ),
  );
  expect(batch.status, await batch.clone().text()).toBeLessThan(300);

  const later = await client.schedule({
    type: "webhook",
    delaySeconds: 7_200,
    payload: { url: receiver.url("/later") },
  });
  await client.reschedule(later.id, { delaySeconds: 7_300 });
  expect((await client.list({ status: "scheduled", limit: 5 })).events.length).toBeGreaterThan(0);
  await client.stats();

  // A receiver's 404 sends the event straight to the dead letters; replay brings it back.
  receiver.behave("/gone", { status: 404 });
  const gone = await client.schedule({
    type: "webhook",
    delaySeconds: 1,
    payload: { url: receiver.url("/gone") },
  });
  for (let i = 0; i < 60 && (await client.get(gone.id)).status !== "dead"; i++) await sleep(500);
  expect((await client.get(gone.id)).status).toBe("dead");
  expect((await client.deadLetters()).events.some((event) => event.id === gone.id)).toBe(true);
  receiver.behave("/gone", {});
  await client.replay(gone.id);

  // Leases: acquire, renew, read, release.
  const lease = await client.acquireLease(`tour-${suffix}`, { owner: "a", ttlSeconds: 30 });
  await client.renewLease(`tour-${suffix}`, { owner: "a", token: lease.token, ttlSeconds: 30 });
  await client.lease(`tour-${suffix}`);
  await client.releaseLease(`tour-${suffix}`, { owner: "a", token: lease.token });

  // Limits, versioned.
  await client.setTypeLimits(`tour.${suffix}`, { maxConcurrency: 5 });
  await client.typeLimits(`tour.${suffix}`);

  // Stock: a receipt, a confirmed hold, a cancelled one, and one left to expire (the worker releases it).
  const sku = `sku-${suffix}`;
  await client.receiveStock(sku, { quantity: 10 });
  const confirmed = await client.hold({ items: [{ sku, quantity: 1 }], holdSeconds: 60 });
  await client.confirm(confirmed.id);
  const cancelled = await client.hold({ items: [{ sku, quantity: 1 }], holdSeconds: 60 });
  await client.cancelHold(cancelled.id);
  const expiring = await client.hold({ items: [{ sku, quantity: 2 }], holdSeconds: 5 });
  await client.stock(sku);
  await client.ledger(sku);

  // Schedules: list, pause, resume, next, delete.
  const schedule = await client.createSchedule({
    rate: "1 hour",
    timezone: "UTC",
    event: { type: "webhook", payload: { url: receiver.url("/hourly") } },
  } as Parameters<HourglassClient["createSchedule"]>[0]);
  await client.listSchedules();
  await client.pauseSchedule(schedule.id);
  await client.resumeSchedule(schedule.id);
  await client.nextOccurrences(schedule.id, 2);
  await client.deleteSchedule(schedule.id);

  const secret = await fetch(await signed(new Request(new URL("v1/webhook-secret", baseUrl))));
  expect(secret.status).toBe(200);
  return { expiringHold: expiring.id, sku };
}
