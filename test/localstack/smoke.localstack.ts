import { execFile } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { promisify } from "node:util";
import { CloudFormationClient, DescribeStacksCommand } from "@aws-sdk/client-cloudformation";
import { LocalstackContainer, type StartedLocalStackContainer } from "@testcontainers/localstack";
import { GenericContainer, Network, type StartedNetwork, type StartedTestContainer } from "testcontainers";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DEFAULTS } from "../../infra/construct/defaults.ts";
import { HourglassClient } from "../../shared/client/client.ts";

/**
 * The LocalStack mode, end to end: LocalStack and a Redis on one Docker network, the stack deployed
 * with cdklocal (`-c localstack=true`: an EventBridge rule drives the dispatcher, since LocalStack's
 * Scheduler never fires), and webhooks delivered to a server on the host. Events due within the
 * look-ahead are sent to the queue by the API itself (a direct send); only those due later wait for
 * the dispatcher. So two of each: all must arrive, none early, and the two beyond the look-ahead
 * prove the dispatcher runs on its own.
 */
const LOCALSTACK_IMAGE = "localstack/localstack:4.12.0"; // the same pin as docker-compose.yml
const STACK = "HourglassSmoke";
/** The deployment's look-ahead (HOURGLASS_LOOKAHEAD_SECONDS in the template): the API sends what is due sooner. */
const LOOK_AHEAD_SECONDS = DEFAULTS.lookAhead.toSeconds();
const DIRECT = [5, LOOK_AHEAD_SECONDS - 50];
// At least 70 s beyond it, so no tick claims them before their status is read below.
const THROUGH_DISPATCHER = [LOOK_AHEAD_SECONDS + 70, LOOK_AHEAD_SECONDS + 100];
const run = promisify(execFile);

let network: StartedNetwork;
let redis: StartedTestContainer;
let localstack: StartedLocalStackContainer;
let receiver: Server;
let client: HourglassClient;
const arrivals = new Map<string, number[]>();

beforeAll(async () => {
  network = await new Network().start();
  redis = await new GenericContainer("redis:7.0").withNetwork(network).withNetworkAliases("redis").start();
  localstack = await new LocalstackContainer(LOCALSTACK_IMAGE)
    .withNetwork(network)
    .withEnvironment({
      LAMBDA_DOCKER_NETWORK: network.getName(),
      LAMBDA_DOCKER_FLAGS: "--add-host=host.docker.internal:host-gateway",
      ...(process.env.LOCALSTACK_AUTH_TOKEN && { LOCALSTACK_AUTH_TOKEN: process.env.LOCALSTACK_AUTH_TOKEN }),
    })
    .withBindMounts([{ source: "/var/run/docker.sock", target: "/var/run/docker.sock" }])
    .start();
  receiver = createServer((req, res) => {
    const id = String(req.headers["hourglass-event-id"] ?? "");
    arrivals.set(id, [...(arrivals.get(id) ?? []), Date.now()]);
    req.resume();
    // The /fail-once path answers 500 to a first attempt: the worker sends the retry itself.
    const failing = req.url?.startsWith("/fail-once") && arrivals.get(id)!.length === 1;
    res.writeHead(failing ? 500 : 204).end();
  });
  await new Promise<void>((done) => receiver.listen(0, "0.0.0.0", done));

  const endpoint = localstack.getConnectionUri();
  const env = {
    ...process.env,
    AWS_ENDPOINT_URL: endpoint,
    AWS_ENDPOINT_URL_S3: endpoint,
    AWS_ACCESS_KEY_ID: "test",
    AWS_SECRET_ACCESS_KEY: "test",
    AWS_REGION: "us-east-1",
    AWS_DEFAULT_REGION: "us-east-1",
    CDK_DISABLE_CLI_TELEMETRY: "1",
    CDK_DISABLE_VERSION_CHECK: "1",
  };
  const context = [
    "-c",
    "production=false",
    "-c",
    "localstack=true",
    "-c",
    "webhookAllowPrivate=true",
    "-c",
    "redisUrl=redis://redis:6379",
    "-c",
    `stackName=${STACK}`,
  ];
  await run("npx", ["cdklocal", "bootstrap", "--no-notices", ...context], { env, timeout: 600_000 });
  await run("npx", ["cdklocal", "deploy", "--no-notices", "--require-approval", "never", ...context], {
    env,
    timeout: 900_000,
  });
  const stacks = await new CloudFormationClient({ endpoint, region: "us-east-1" }).send(
    new DescribeStacksCommand({ StackName: STACK }),
  );
  const apiUrl = stacks.Stacks?.[0]?.Outputs?.find((o) => o.OutputKey === "ApiUrl")?.OutputValue ?? "";
  // LocalStack serves https://<id>.execute-api.amazonaws.com/api/ at <endpoint>/restapis/<id>/api/_user_request_/
  const apiId = /^https:\/\/([^.]+)\./.exec(apiUrl)?.[1];
  expect(apiId, `ApiUrl output: ${apiUrl}`).toBeTruthy();
  client = new HourglassClient({
    url: `${endpoint}/restapis/${apiId}/api/_user_request_`,
    sigv4: { region: "us-east-1" },
  });
});

afterAll(async () => {
  receiver?.close();
  await localstack?.stop();
  await redis?.stop();
  await network?.stop();
});

it("delivers webhooks sent directly and through the dispatcher, none early; a cancel and a reschedule behave", async () => {
  const port = (receiver.address() as AddressInfo).port;
  const hook = `http://host.docker.internal:${port}/hook`;
  const schedule = (delays: number[]) =>
    Promise.all(
      delays.map((delaySeconds) =>
        client.schedule({ type: "webhook", delaySeconds, payload: { url: hook } }),
      ),
    );
  const direct = await schedule(DIRECT);
  const dispatched = await schedule(THROUGH_DISPATCHER);
  // Which path each took: a direct send leaves the event dispatched at once (or already running or
  // done, on a slow LocalStack); the others wait scheduled until a dispatcher tick claims them.
  for (const event of direct)
    expect(["dispatched", "running", "succeeded"], event.runAt).toContain(
      (await client.get(event.id)).status,
    );
  for (const event of dispatched) expect((await client.get(event.id)).status, event.runAt).toBe("scheduled");
  const scheduled = [...direct, ...dispatched];
  const cancelled = await client.schedule({ type: "webhook", delaySeconds: 60, payload: { url: hook } });
  await client.cancel(cancelled.id);
  const moved = await client.schedule({ type: "webhook", delaySeconds: 600, payload: { url: hook } });
  const movedTo = await client.reschedule(moved.id, { delaySeconds: 90 });

  // The same paths the AWS-shaped run checks (test/support/aws-shaped-scenario.ts), where LocalStack
  // can: a retry the worker sends itself, and a recurring schedule materialized by the dispatcher.
  // (pause --aws needs the Scheduler schedule, which the events-rule variant has not; LocalStack's
  // community edition does not enforce IAM, which the AWS-shaped run checks instead.)
  const retried = await client.schedule({
    type: "webhook",
    delaySeconds: 5,
    payload: { url: `http://host.docker.internal:${port}/fail-once` },
  });
  const recurring = await client.createSchedule({
    rate: "30 seconds",
    timezone: "UTC",
    event: { type: "webhook", payload: { url: `http://host.docker.internal:${port}/recurring` } },
  } as Parameters<HourglassClient["createSchedule"]>[0]);

  // The last is due look-ahead + 100 s from now; a dispatcher tick a minute apart and a cold start on top.
  const deadline = Date.now() + (LOOK_AHEAD_SECONDS + 220) * 1_000;
  const waiting = () => [...scheduled, movedTo].filter((e) => !arrivals.has(e.id));
  while (waiting().length > 0 && Date.now() < deadline) await new Promise((done) => setTimeout(done, 2_000));
  expect(waiting().map((e) => e.id)).toEqual([]);

  for (const event of [...scheduled, movedTo]) {
    const [first] = arrivals.get(event.id)!;
    expect(first).toBeGreaterThanOrEqual(Date.parse(event.runAt));
  }
  expect(arrivals.has(cancelled.id)).toBe(false);
  expect((await client.get(cancelled.id)).status).toBe("cancelled");
  expect((await client.get(movedTo.id)).status).toBe("succeeded");
  expect(arrivals.get(retried.id)).toHaveLength(2);
  expect((await client.get(retried.id)).status).toBe("succeeded");
  const occurrences = await client.list({ scheduleId: recurring.id, status: "succeeded" });
  expect(occurrences.events.length).toBeGreaterThan(0);
});
