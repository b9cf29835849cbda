import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { loadavg } from "node:os";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { startRuntime } from "../shared/local/runtime.ts";
import { benchHourglass, enqueueBatch } from "./hourglass.ts";
import { cpuMsOfPids, dynamoLocalCpuMs, pidsOf } from "./process-cpu.ts";
import { SqsEventCounter } from "./sqs-events.ts";
import { startBenchStack } from "./stack.ts";
import { lateness, payloadOf, percentile, sleep, until } from "./stats.ts";

/**
 * `npx tsx bench/full-burst.ts [--n 20000]`: the full-stack burst row of `npm run bench` alone,
 * instrumented, to say where each second of its p99 goes (docs/benchmarks.md, "Full-stack burst:
 * where the time goes"). SDK middleware timestamps every send, receive, journal write and delete;
 * the worker hook timestamps every start. All times are relative to the instant the burst is due.
 */
const { values } = parseArgs({
  options: {
    n: { type: "string", default: "20000" },
    pollers: { type: "string", default: "16" },
    /** Lead time from the start of the enqueue to the due time (default: from a probe's enqueue rate). */
    lead: { type: "string" },
    /** `child` (as `npm start` runs it) or `process` (fauxqs in this process, the layout before). */
    fauxqs: { type: "string", default: "child" },
    /** Journal this many events due a day ahead first, in another instance, as `npm run bench`'s enqueue row does. */
    preload: { type: "string", default: "0" },
    /**
     * `npm start`'s layout: the worker in K processes of its own (`bench/consumer.ts`, forked by
     * the runtime's WorkerPool), this process the dispatcher only. 0: the worker in this process.
     */
    workers: { type: "string", default: "0" },
    /** Writes a V8 CPU profile of this process over the burst window to this file. */
    profile: { type: "string" },
    /** With --workers: each worker process writes a V8 CPU profile of its whole life into this folder. */
    "worker-profile": { type: "string" },
  },
});
const n = Number(values.n);
/** Long polls in flight; 16 is what `npm run bench` uses. */
const pollers = Number(values.pollers);

const loadAverageAtStart = loadavg().map((l) => Number(l.toFixed(1)));
const fauxqs = values.fauxqs === "process" ? "process" : "child";
const bench = await startBenchStack({ fauxqs });
const { redisServer } = bench;
const dynamoPort = Number(new URL(bench.stack.dynamoEndpoint).port);

/** Timestamps of completed calls, each with the number of messages or items it carried. */
const calls: Record<string, { at: number; items: number }[]> = {};
const record = (name: string, items: number) => {
  calls[name] = calls[name] ?? [];
  calls[name].push({ at: Date.now(), items });
};

if (Number(values.preload) > 0) {
  const first = await benchHourglass("full", redisServer.url);
  await enqueueBatch(first.hourglass, Number(values.preload), 100, 500, 86_400_000);
  await first.hourglass.close();
}
const { hourglass, samples, workers } = await benchHourglass("full", redisServer.url);
const sqsEvents = new SqsEventCounter();
const middleware =
  (service: string) =>
  (next: (args: unknown) => Promise<{ output?: unknown }>, context: { commandName?: string }) =>
  async (args: unknown) => {
    const result = await next(args);
    const command = (context.commandName ?? "?").replace(/Command$/, "");
    const input = (args as { input?: { Entries?: unknown[]; TableName?: string } }).input;
    const output = result.output as
      | { Messages?: unknown[]; Responses?: Record<string, unknown[]> }
      | undefined;
    const items =
      service === "sqs"
        ? sqsEvents.count(command, input, output)
        : command.endsWith("Batch")
          ? (input?.Entries?.length ?? 0)
          : command === "BatchGetItem"
            ? Object.values(output?.Responses ?? {}).reduce((sum, r) => sum + r.length, 0)
            : 1;
    const table = input?.TableName?.endsWith("-leases") ? ":lease" : "";
    record(`${service}:${command}${table}`, items);
    return result;
  };
for (const [service, client] of [
  ["dynamodb", hourglass.dynamo],
  ["dynamodb", hourglass.dynamoReads],
  ["sqs", hourglass.sqs],
] as const) {
  (client.middlewareStack as unknown as { add(m: unknown, o: unknown): void }).add(middleware(service), {
    step: "initialize",
    name: `instrument-${service}-${Math.random()}`,
  });
}

// Enqueue first (not measured here), with the same lead rule as bench/run.ts.
const workerCount = Number(values.workers);
const runtime = startRuntime(hourglass, {
  pollers,
  maxInFlight: n,
  ...(workerCount > 0 && {
    workers: {
      ...workers(workerCount, { pollers, maxInFlight: n }, (list) => {
        for (const [key, at, items] of list) {
          calls[key] = calls[key] ?? [];
          calls[key].push({ at, items });
        }
      }),
      ...(values["worker-profile"] && {
        execArgv: [...process.execArgv, "--cpu-prof", "--cpu-prof-dir", values["worker-profile"]],
      }),
    },
  }),
});
await runtime.ready;
const workerPids = runtime.pool?.pids ?? [];
const payload = payloadOf(100);
const enqueueStarted = Date.now();
const probeDue = Date.now() + 3_600_000;
await hourglass.events.scheduleBatch(
  "bench",
  Array.from({ length: 500 }, () => ({
    type: "bench.noop",
    payload,
    runAt: new Date(probeDue).toISOString(),
  })),
);
const enqueueRate = 500 / ((Date.now() - enqueueStarted) / 1000);
const lead = values.lead
  ? Number(values.lead)
  : Math.max(8_000, Math.ceil((n / enqueueRate) * 1_500) + 6_000);
const dueAt = Date.now() + lead;
const burstEnqueueStarted = Date.now();
for (let i = 0; i < n; i += 500) {
  await hourglass.events.scheduleBatch(
    "bench",
    Array.from({ length: Math.min(500, n - i) }, () => ({
      type: "bench.noop",
      payload,
      runAt: new Date(dueAt).toISOString(),
    })),
  );
}
const enqueueLateMs = Math.max(0, Date.now() - dueAt);
const enqueuePerSecond = Math.round(n / ((Date.now() - burstEnqueueStarted) / 1000));
for (const key of Object.keys(calls)) if (!key.startsWith("sqs:SendMessageBatch")) delete calls[key];

// The process's own CPU and event-loop delay over the burst window, and DynamoDB Local's CPU.
await sleep(Math.max(0, dueAt - 1_000 - Date.now()));
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();
const cpuBefore = process.cpuUsage();
const javaBefore = dynamoLocalCpuMs(dynamoPort);
const workersBefore = cpuMsOfPids(workerPids);
const profiler = values.profile ? new Session() : undefined;
if (profiler) {
  profiler.connect();
  await profiler.post("Profiler.enable");
  await profiler.post("Profiler.start");
}
const windowStart = Date.now();
// Each process's share of the cores, every 500 ms: what ran while the receives slowed.
const processes: Record<string, number[]> = {
  workers: workerPids,
  fauxqs: pidsOf("fauxqs-server.mjs", String(new URL(bench.stack.sqsEndpoint).port)),
  dynamoLocal: pidsOf("DynamoDBLocal.jar", `-port\0${dynamoPort}\0`),
  redis: pidsOf("redis-server", String(new URL(redisServer.url).port)),
  bench: [process.pid],
};
const cpuTimeline: { at: number; ms: Record<string, number> }[] = [];
const sampleCpu = () =>
  cpuTimeline.push({
    at: Date.now(),
    ms: Object.fromEntries(Object.entries(processes).map(([name, pids]) => [name, cpuMsOfPids(pids)])),
  });
sampleCpu();
const cpuSampler = setInterval(sampleCpu, 500);
const complete = await until(() => samples.length >= n, 180_000);
const lastStart = Date.now();
// The trailing writes: until every success is in the journal and every message deleted (the
// worker processes report their calls every 50 ms).
await until(() => count("dynamodb:UpdateItem") >= n && count("sqs:DeleteMessageBatch") >= n, 180_000);
const windowMs = Date.now() - windowStart;
clearInterval(cpuSampler);
sampleCpu();
const cpu = process.cpuUsage(cpuBefore);
const javaAfter = dynamoLocalCpuMs(dynamoPort);
const workersCpuMs = cpuMsOfPids(workerPids) - workersBefore;
loop.disable();
if (profiler && values.profile) {
  const { profile } = await profiler.post("Profiler.stop");
  writeFileSync(values.profile, JSON.stringify(profile));
  profiler.disconnect();
}
await runtime.stop();
await hourglass.close();
await bench.stop();

function count(key: string): number {
  return (calls[key] ?? []).reduce((sum, c) => sum + c.items, 0);
}
/** When the given share of the burst's items had gone through `key`, in ms after the due time. */
function at(key: string, share: number): string {
  const list = (calls[key] ?? []).slice().sort((a, b) => a.at - b.at);
  const target = Math.ceil(share * n);
  let seen = 0;
  for (const c of list) {
    seen += c.items;
    if (seen >= target) return `${c.at - dueAt} ms`;
  }
  return `— (${seen} of ${n})`;
}
/** CPU time of these processes so far, from /proc (0 for none). */
const late = lateness(samples);
/** Second by second from the due time, so a stall (and what ran instead) shows. */
function timeline(): string[] {
  const seconds = Math.ceil((lastStart - dueAt) / 1000) + 1;
  const count = (times: number[]) => {
    const perSecond = new Array<number>(seconds).fill(0);
    for (const t of times)
      if (t >= dueAt && t < dueAt + seconds * 1000) perSecond[Math.floor((t - dueAt) / 1000)]!++;
    return perSecond;
  };
  const spread = (name: string) => (calls[name] ?? []).flatMap((c) => new Array<number>(c.items).fill(c.at));
  const received = count(spread("sqs:ReceiveMessage"));
  const started = count(samples.map((s) => s.startedAt));
  const written = count(spread("dynamodb:UpdateItem"));
  return received.map((r, i) => `+${i} s: ${r} / ${started[i]} / ${written[i]}`);
}
function cpuShares(): string[] {
  const rows: string[] = [];
  for (let i = 1; i < cpuTimeline.length; i++) {
    const [a, b] = [cpuTimeline[i - 1]!, cpuTimeline[i]!];
    if (a.at > lastStart + 3_000) break;
    const shares = Object.keys(processes).map(
      (name) => `${name} ${((b.ms[name]! - a.ms[name]!) / (b.at - a.at)).toFixed(2)}`,
    );
    rows.push(`${((a.at - dueAt) / 1000).toFixed(1)} s: ${shares.join(", ")}`);
  }
  return rows;
}
/** How full the polls were while the burst drained, in events (10 messages a poll is SQS's most). */
function receivesInBurst() {
  const polls = (calls["sqs:ReceiveMessage"] ?? []).filter((c) => c.at >= dueAt && c.at <= lastStart);
  const events = polls.reduce((sum, c) => sum + c.items, 0);
  return {
    polls: polls.length,
    eventsPerPoll: Number((events / Math.max(1, polls.length)).toFixed(1)),
    full: polls.filter((c) => c.items >= 10).length,
    empty: polls.filter((c) => c.items === 0).length,
  };
}
const starts = samples.map((s) => s.startedAt - dueAt);
const report = {
  loadAverage: loadavg().map((l) => Number(l.toFixed(1))),
  loadAverageAtStart,
  redisHz: bench.hz,
  fauxqs,
  workers: workerCount,
  n,
  pollers,
  complete,
  enqueueLateMs,
  enqueuePerSecond,
  leadMs: lead,
  lateness: {
    p50: late.p50,
    p99: late.p99,
    max: late.max,
    early: late.early,
    drainPerSecond: Math.round(late.drainPerSecond),
  },
  "sent to SQS (dispatcher), 50% / 99% / 100%": [
    at("sqs:SendMessageBatch", 0.5),
    at("sqs:SendMessageBatch", 0.99),
    at("sqs:SendMessageBatch", 1),
  ],
  "payloads read (BatchGetItem), 100%": at("dynamodb:BatchGetItem", 1),
  "received from SQS, 50% / 99% / 100%": [
    at("sqs:ReceiveMessage", 0.5),
    at("sqs:ReceiveMessage", 0.99),
    at("sqs:ReceiveMessage", 1),
  ],
  "handler started, 50% / 99% / 100%": [
    `${percentile(starts, 50)} ms`,
    `${percentile(starts, 99)} ms`,
    `${Math.max(...starts)} ms`,
  ],
  "success in the journal (UpdateItem), 50% / 99% / 100%": [
    at("dynamodb:UpdateItem", 0.5),
    at("dynamodb:UpdateItem", 0.99),
    at("dynamodb:UpdateItem", 1),
  ],
  "message deleted, 50% / 99% / 100%": [
    at("sqs:DeleteMessageBatch", 0.5),
    at("sqs:DeleteMessageBatch", 0.99),
    at("sqs:DeleteMessageBatch", 1),
  ],
  lastStartAfterDueMs: lastStart - dueAt,
  "receives from the due time to the last start": receivesInBurst(),
  "per second after the due time: events received / handlers started / outcomes written": timeline(),
  "cores per process, each 500 ms from 1 s before the due time": cpuShares(),
  requests: Object.fromEntries(Object.entries(calls).map(([k, v]) => [k, v.length])),
  window: {
    ms: windowMs,
    nodeCpuCores: Number(((cpu.user + cpu.system) / 1000 / windowMs).toFixed(2)),
    nodeCpuMsPerEvent: Number(((cpu.user + cpu.system) / 1000 / n).toFixed(2)),
    workersCpuCores: Number((workersCpuMs / windowMs).toFixed(2)),
    workersCpuMsPerEvent: Number((workersCpuMs / n).toFixed(2)),
    dynamoLocalCpuCores:
      javaBefore !== undefined && javaAfter !== undefined
        ? Number(((javaAfter - javaBefore) / windowMs).toFixed(2))
        : "unknown",
    eventLoopDelayP99Ms: Math.round(loop.percentile(99) / 1e6),
    eventLoopDelayMaxMs: Math.round(loop.max / 1e6),
  },
};
console.log(JSON.stringify(report, null, 2));
