import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import { promisify } from "node:util";
import { expect } from "vitest";
import { type AwsShaped, OPERATOR_KEY, REGION, startAwsShaped } from "../../scripts/aws-shaped/harness.ts";
import { iamReport, unusedGrants } from "../../scripts/aws-shaped/iam-report.ts";
import { type EventBody, HourglassClient } from "../../shared/client/client.ts";
import { tourEveryRoute } from "./aws-shaped-tour.ts";
import { privateAddress, startWebhookReceiver, type WebhookReceiver } from "./webhook-receiver.ts";

/**
 * Grants a role holds that this run does not call, each with the code path that needs it. Anything
 * else a role allows and no call used fails the run: a grant nobody calls is a grant to remove.
 */
export const GRANTS_NOT_CALLED_IN_A_SHORT_RUN: readonly { grant: RegExp; why: string }[] = [
  { grant: /^\w+ xray:/, why: "Lambda's active tracing writes segments with the role, not the code" },
  {
    grant: /^\w+ secretsmanager:DescribeSecret /,
    why: "part of CDK's grantRead; the code reads values only",
  },
  {
    grant: /^\w+ sqs:GetQueueUrl /,
    why: "part of CDK's queue grants; the functions are given the queue's URL",
  },
  { grant: /^dispatcher sqs:GetQueueAttributes /, why: "part of CDK's send grant" },
  { grant: /^worker sqs:ChangeMessageVisibility /, why: "part of CDK's consume grant for the event source" },
  {
    grant: /^dispatcher dynamodb:(GetItem|UpdateItem) \S+HourglassEvents/,
    why: "recovery after Redis lost data: one journal read, and markCancelled for a tombstoned entry (Dispatcher.restoreFromJournal)",
  },
  {
    grant: /^dispatcher dynamodb:GetItem \S+HourglassSchedules/,
    why: "Materializer re-reads a schedule another dispatcher advanced first",
  },
  {
    grant: /^worker dynamodb:(BatchGetItem|GetItem) \S+HourglassEvents/,
    why: "a payload too large for its queue message is read from the journal (EventJournal.load)",
  },
  {
    grant: /^worker dynamodb:(PutItem|Query) \S+HourglassEvents/,
    why: "an event's callbacks are scheduled as events of their own (Worker, EventService.schedule)",
  },
  {
    grant: /^worker dynamodb:Query \S+HourglassLedger/,
    why: "StockLedger reads a SKU's history when its counters need recomputing",
  },
];

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await sleep(500);
  }
}

/**
 * The short run of the synthesized stack in the AWS-shaped mode (issue 32, item 4), for one profile:
 * a webhook through the dispatcher, one sent directly, one retried by the worker itself, a cancel
 * after dispatch, a recurring schedule, `hourglass pause --aws` stopping all three paths and
 * `resume --aws` starting them again, and IAM's verdict on every AWS call each function made.
 */
export async function runAwsShapedScenario(profile: "standard" | "lean"): Promise<void> {
  let running!: AwsShaped;
  let receiver!: WebhookReceiver;
  let client!: HourglassClient;
  const stackName = `hgaws-${profile}-${randomBytes(3).toString("hex")}`;

  const setUp = async () => {
    receiver = await startWebhookReceiver(privateAddress());
    running = await startAwsShaped({
      profile,
      stackName,
      // The receiver stands in for a host in the VPC: a deployment that allows private targets.
      // Standard names transitions for its bus, so each function's PutEvents is checked against its
      // role here; lean keeps the free default (no bus, nothing published).
      context: {
        webhookAllowPrivate: "true",
        ...(profile === "standard" && {
          notifications: "scheduled,dispatched,succeeded,retrying,dead,cancelled",
        }),
      },
      dataDir: `.hourglass/test/aws-shaped-${stackName}`,
      dynamoEndpoint: process.env.AWS_ENDPOINT_URL_DYNAMODB!,
      sqsEndpoint: process.env.AWS_ENDPOINT_URL_SQS!,
      maxEnvironments: { api: 2, dispatcher: 1, worker: 3 },
    });
    client = new HourglassClient({ url: running.url, sigv4: { region: REGION }, retries: 0 });
    const schedule = client.schedule.bind(client);
    client.schedule = async (input) => {
      const event = await schedule(input);
      created.set(event.id, event.runAt);
      return event;
    };
  };
  const tearDown = async () => {
    await running?.stop();
    await receiver?.close();
  };

  const cli = async (...args: string[]) => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      AWS_ENDPOINT_URL: running.awsEndpoint,
      AWS_ACCESS_KEY_ID: OPERATOR_KEY.accessKeyId,
      AWS_SECRET_ACCESS_KEY: OPERATOR_KEY.secretAccessKey,
      AWS_REGION: REGION,
    };
    // The suite's own stand-in endpoints would win over AWS_ENDPOINT_URL and skip the IAM check.
    delete env.AWS_ENDPOINT_URL_DYNAMODB;
    delete env.AWS_ENDPOINT_URL_SQS;
    const { stdout } = await promisify(execFile)(
      "node",
      ["scripts/hourglass.mjs", ...args, "--aws", "--stack", stackName, "--json"],
      { env, timeout: 120_000 },
    );
    return JSON.parse(stdout) as Record<string, unknown>;
  };
  const webhook = (path: string) => ({
    type: "webhook",
    payload: { url: receiver.url(path), body: { path } },
  });
  const status = async (event: EventBody) => (await client.get(event.id)).status;
  /**
   * A first attempt may not start before the runAt it was created with; a retry, which moves runAt to
   * the retry's time, not before the runAt it has now (the retries here are each event's last attempt).
   */
  const neverEarly = async (path: string) => {
    for (const delivery of receiver.of(path)) {
      const event = await client.get(delivery.eventId);
      const runAt =
        delivery.attempt === 1
          ? Date.parse((await firstRunAt(event)) ?? event.runAt)
          : Date.parse(event.runAt);
      expect(
        delivery.at,
        `${path} ${delivery.eventId} attempt ${delivery.attempt} started before its runAt`,
      ).toBeGreaterThanOrEqual(runAt);
    }
  };
  const created = new Map<string, string>();
  const firstRunAt = async (event: EventBody) => created.get(event.id);

  let passed = false;
  await setUp();
  try {
    const t0 = Date.now();
    receiver.behave("/retry", { failTimes: 1 });
    // Beyond the template's look-ahead (120 s), with 15 s to spare for a cold API: only the
    // dispatcher's tick can send it, and it is still only scheduled once created.
    const viaDispatcher = await client.schedule({
      ...webhook("/dispatcher"),
      runAt: new Date(t0 + 135_000).toISOString(),
    });
    expect(await status(viaDispatcher)).toBe("scheduled");
    const direct = await client.schedule({ ...webhook("/direct"), delaySeconds: 5 });
    const retried = await client.schedule({ ...webhook("/retry"), delaySeconds: 5 });
    const cancelled = await client.schedule({ ...webhook("/cancelled"), delaySeconds: 40 });
    const recurring = await client.createSchedule({
      rate: "30 seconds",
      timezone: "UTC",
      event: { type: "webhook", payload: { url: receiver.url("/recurring") } },
    } as Parameters<HourglassClient["createSchedule"]>[0]);

    await until(
      "the direct webhook",
      async () => (receiver.of("/direct").length > 0 ? true : undefined),
      40_000,
    );
    // The retry is sent by the worker itself (within the look-ahead): it needs sqs:SendMessage.
    await until(
      "the retried webhook's second attempt",
      async () => (receiver.of("/retry").length >= 2 ? true : undefined),
      40_000,
    );
    expect(await status(direct)).toBe("succeeded");
    expect(receiver.of("/retry").map((d) => [d.attempt, d.status])).toEqual([
      [1, 500],
      [2, 200],
    ]);
    expect(await status(retried)).toBe("succeeded");

    await until(
      "the cancel-me event to be dispatched",
      async () => ((await status(cancelled)) === "dispatched" ? true : undefined),
      20_000,
    );
    expect((await client.cancel(cancelled.id)).status).toBe("cancelled");

    // While the far event waits for its tick: every other kind of call, for the IAM check.
    const tour = await tourEveryRoute(client, running.url, REGION, receiver);

    await until(
      "the far event to be dispatched by a tick",
      async () => ((await status(viaDispatcher)) === "dispatched" ? true : undefined),
      80_000,
    );

    // Pause while an attempt is in flight: its retry must wait, as must a direct send and the dispatcher.
    let release!: () => void;
    const held = new Promise<void>((done) => {
      release = done;
    });
    receiver.behave("/paused-retry", { failTimes: 1, hold: held });
    const arrived = receiver.arrival("/paused-retry");
    const pausedRetry = await client.schedule({ ...webhook("/paused-retry"), delaySeconds: 2 });
    await arrived;
    const paused = await cli("pause");
    release(); // the first attempt now fails, and its retry meets the pause
    expect(JSON.stringify(paused)).toMatch(/DISABLED/);
    const pausedDirect = await client.schedule({ ...webhook("/paused-direct"), delaySeconds: 2 });
    const shown = await cli("status");
    expect(JSON.stringify(shown)).toMatch(/"paused":\s*true/);
    await sleep(8_000);
    // The dispatcher itself honours the pause too (Scheduler no longer fires it; invoke it anyway).
    await running.functions.dispatcher!.invoke({});
    await sleep(2_000);
    expect(receiver.of("/paused-direct")).toHaveLength(0);
    expect(receiver.of("/paused-retry")).toHaveLength(1);
    expect(await status(pausedDirect)).toBe("scheduled");
    expect(await status(pausedRetry)).toBe("retrying");

    await cli("resume");
    await until(
      "the paused direct send after resume",
      async () => (receiver.of("/paused-direct").length > 0 ? true : undefined),
      90_000,
    );
    await until(
      "the paused retry after resume",
      async () => (receiver.of("/paused-retry").length >= 2 ? true : undefined),
      90_000,
    );
    await until(
      "the far event",
      async () => (receiver.of("/dispatcher").length > 0 ? true : undefined),
      Math.max(20_000, t0 + 155_000 - Date.now()),
    );
    await until(
      "an occurrence of the recurring schedule",
      async () => (receiver.of("/recurring").length > 0 ? true : undefined),
      90_000,
    );

    await until(
      "the expiring hold to be released by the worker",
      async () => ((await client.reservation(tour.expiringHold)).status !== "held" ? true : undefined),
      30_000,
    );
    expect((await client.stock(tour.sku)).held).toBe(0);

    // Each once, none early; the cancelled one never.
    for (const path of ["/dispatcher", "/direct", "/paused-direct"])
      expect(receiver.of(path), path).toHaveLength(1);
    expect(receiver.of("/cancelled")).toHaveLength(0);
    const occurrences = receiver.of("/recurring").map((d) => d.eventId);
    expect(new Set(occurrences).size).toBe(occurrences.length);
    // On time too, where nothing held them back (a tick late would be 60 s).
    for (const path of ["/dispatcher", "/direct", "/retry"])
      for (const delivery of receiver.of(path).filter((d) => d.status === 200)) {
        const event = await client.get(delivery.eventId);
        expect(delivery.at - Date.parse(event.runAt), `${path} lateness`).toBeLessThan(15_000);
      }
    expect(
      running.gateway
        .calls()
        .some((call) => call.principal === "dispatcher" && call.action === "sqs:SendMessage"),
      "the dispatcher sent something",
    ).toBe(true);
    for (const path of ["/dispatcher", "/direct", "/retry", "/paused-direct", "/paused-retry", "/recurring"])
      await neverEarly(path);
    expect((await client.getSchedule(recurring.id)).id).toBe(recurring.id);

    const report = iamReport(running.gateway.calls());
    expect(report.denied, report.text).toEqual([]);
    for (const role of ["api", "dispatcher", "worker"])
      expect(
        running.gateway.calls().some((call) => call.principal === role),
        role,
      ).toBe(true);
    const unused = unusedGrants(
      running.principals.filter((p) => ["api", "dispatcher", "worker"].includes(p.name)),
      running.gateway.calls(),
    ).filter(
      (grant) =>
        !GRANTS_NOT_CALLED_IN_A_SHORT_RUN.some((allowed) =>
          allowed.grant.test(`${grant.principal} ${grant.action} ${grant.resources.join(" ")}`),
        ),
    );
    writeFileSync(
      `.hourglass/test/aws-shaped-${stackName}/iam.json`,
      JSON.stringify({ calls: report.text.split("\n"), unused }, null, 2),
    );
    expect(
      unused.map((grant) => `${grant.principal} ${grant.action} ${grant.resources.join(" ")}`),
      report.text,
    ).toEqual([]);
    passed = true;
  } finally {
    await tearDown();
    // A failed run keeps its logs, template and IAM report (the path is in the failure); a passed
    // one leaves nothing behind (each holds a synthesized cdk.out, about 40 MB).
    if (passed) rmSync(`.hourglass/test/aws-shaped-${stackName}`, { recursive: true, force: true });
  }
}
