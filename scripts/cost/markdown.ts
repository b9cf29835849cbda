import { fileURLToPath } from "node:url";
import {
  type Bill,
  bill,
  fixedCost,
  publishedTransitions,
  qstashUsd,
  schedulerUsd,
  TRANSITIONS_VARIABLE,
} from "./bill.ts";
import { type LambdaMeasurement, PATHS, PER_TICK, REQUESTS_PER_JOB } from "./measured.ts";
import { ASSUMPTIONS, EC2_INSTANCE_HOUR, PRICES, type Price, TERMS, VALKEY_NODE_HOUR } from "./prices.ts";
import * as prose from "./prose.ts";
import { type CfnTemplate, synthesizeProfile } from "./template.ts";

export const DOC_PATH = fileURLToPath(new URL("../../docs/cost.md", import.meta.url));
export const REGENERATE = "npm run cost -- --write-docs";

type Profiles = Readonly<Record<"lean" | "standard", CfnTemplate>>;
const VOLUMES = [1e6, 10e6, 100e6] as const;
const TARGETS = { leanFixed: 20, leanBatch10M: 70, qstashFrom: 3e6, standardFixed: 110 } as const;

const usd = (n: number) =>
  n === 0
    ? "$0"
    : `$${n >= 1000 ? Math.round(n).toLocaleString("en-US") : n >= 10 ? n.toFixed(2) : n >= 0.01 ? n.toFixed(2) : n.toFixed(4)}`;
const millions = (jobs: number) => `${Number((jobs / 1e6).toFixed(1))}M`;
const table = (head: readonly string[], rows: readonly (readonly string[])[]) =>
  [
    `| ${head.join(" | ")} |`,
    `|${head.map(() => "---").join("|")}|`,
    ...rows.map((r) => `| ${r.join(" | ")} |`),
  ].join("\n");

/** The smallest volume (to 0.1M) from which a profile's batch path costs less than QStash, if any up to 1B. */
export function qstashBreakEven(template: CfnTemplate, measurement: LambdaMeasurement): number | undefined {
  const cheaper = (jobs: number) => bill(template, measurement, "batch", jobs).totalUsd < qstashUsd(jobs);
  let high = 1e9;
  if (!cheaper(high)) return undefined;
  let low = 1e5;
  if (cheaper(low)) return low;
  while (high - low > 1e5) {
    const mid = Math.round((low + high) / 2 / 1e5) * 1e5;
    if (mid === low || mid === high) break;
    if (cheaper(mid)) high = mid;
    else low = mid;
  }
  return high;
}

function sideBySide(profiles: Profiles, measurement: LambdaMeasurement): string {
  const rows = VOLUMES.map((jobs) => {
    const cell = (b: Bill) => `${usd(b.totalUsd)} (${usd(b.totalUsd / (jobs / 1e6))}/M)`;
    return [
      millions(jobs),
      cell(bill(profiles.lean, measurement, "batch", jobs)),
      usd(bill(profiles.lean, measurement, "single", jobs).totalUsd),
      cell(bill(profiles.standard, measurement, "batch", jobs)),
      usd(bill(profiles.standard, measurement, "single", jobs).totalUsd),
      usd(qstashUsd(jobs)),
      usd(schedulerUsd(jobs)),
    ];
  });
  return table(
    [
      "jobs a month",
      "lean, batch",
      "lean, one call a job",
      "standard, batch",
      "standard, one call a job",
      "QStash pay as you go",
      "EventBridge Scheduler + 128 MB sender Lambda",
    ],
    rows,
  );
}

function fixedTable(profiles: Profiles, measurement: LambdaMeasurement): string {
  const lean = fixedCost(profiles.lean, measurement);
  const standard = fixedCost(profiles.standard, measurement);
  const items = [...new Set([...standard, ...lean].map((l) => l.item))];
  const cell = (lines: typeof lean, item: string) => {
    const found = lines.filter((l) => l.item === item);
    if (found.length === 0) return "–";
    return found.map((l) => `${l.detail}: ${usd(l.usd)}`).join("; ");
  };
  const total = (lines: typeof lean) => `**${usd(lines.reduce((s, l) => s + l.usd, 0))}**`;
  return table(
    ["item", "lean", "standard"],
    [
      ...items.map((item) => [item, cell(lean, item), cell(standard, item)]),
      ["**fixed**", total(lean), total(standard)],
    ],
  );
}

function variableTable(template: CfnTemplate, measurement: LambdaMeasurement, jobs: number): string {
  const bills = PATHS.map((path) => bill(template, measurement, path, jobs));
  const items = [...new Set(bills.flatMap((b) => b.variable.map((l) => l.item)))];
  const perMillion = (b: Bill, item: string) => {
    const l = b.variable.find((v) => v.item === item);
    return l ? `${usd(l.usd / (jobs / 1e6))} (${l.detail})` : "–";
  };
  return table(
    ["per million jobs", ...PATHS],
    [
      ...items.map((item) => [item, ...bills.map((b) => perMillion(b, item))]),
      ["**variable**", ...bills.map((b) => `**${usd(b.variableUsd / (jobs / 1e6))}**`)],
    ],
  );
}

function requestsTable(): string {
  return table(
    ["per job", ...PATHS],
    [
      ["DynamoDB write units", ...PATHS.map((p) => String(REQUESTS_PER_JOB[p].wru))],
      ["DynamoDB read units", ...PATHS.map((p) => String(REQUESTS_PER_JOB[p].rru))],
      ["SQS sends (SendMessageBatch)", ...PATHS.map((p) => String(REQUESTS_PER_JOB[p].sqsSends))],
      ["worker attempts", ...PATHS.map((p) => String(REQUESTS_PER_JOB[p].attempts))],
      ["API requests", ...PATHS.map((p) => String(Number(REQUESTS_PER_JOB[p].apiRequests.toFixed(4))))],
      [
        "transitions (notifications if published)",
        ...PATHS.map((p) => String(REQUESTS_PER_JOB[p].transitions.length)),
      ],
    ],
  );
}

function lambdaTable(measurement: LambdaMeasurement): string {
  const ms = (f: { msPerInvocation: number; meanMs: number }) =>
    `${Math.round(f.msPerInvocation)} (${Math.round(f.meanMs)})`;
  return table(
    [
      "jobs a second",
      "jobs",
      "worker invocations a job",
      "worker ms: median (mean)",
      "API ms a request: median (mean), jobs a request",
      "dispatcher ms a tick: median (mean)",
      "load average (2 cores)",
    ],
    measurement.runs.map((r) => [
      String(r.jobsPerSecond),
      String(r.jobs),
      r.worker.invocationsPerJob.toFixed(3),
      ms(r.worker),
      `${ms(r.api)}, ${r.api.jobsPerRequest}`,
      ms(r.dispatcher),
      String(r.loadAverage),
    ]),
  );
}

function termsTable(): string {
  return table(
    ["term", "amount", "what", "source (seen)"],
    Object.entries(TERMS).map(([name, t]) => [
      name,
      t.usd.toLocaleString("en-US"),
      t.unit,
      `${t.source} (${t.seen})${t.assumption ? `; assumption: ${t.assumption}` : ""}`,
    ]),
  );
}

function pricesTable(): string {
  const entries: [string, Price][] = [
    ...Object.entries(PRICES),
    ...Object.entries(EC2_INSTANCE_HOUR).map(([k, p]) => [`EC2 ${k}`, p] as [string, Price]),
    ...Object.entries(VALKEY_NODE_HOUR).map(([k, p]) => [`ElastiCache ${k}`, p] as [string, Price]),
  ];
  const amount = (p: Price) =>
    p.usd < 0.001 ? `$${Number((p.usd * 1e6).toPrecision(6))} per million` : `$${p.usd}`;
  return table(
    ["price", "amount", "unit", "source (seen)"],
    entries.map(([name, p]) => [
      name,
      amount(p),
      p.unit,
      `${p.source} (${p.seen})${p.assumption ? `; assumption: ${p.assumption}` : ""}`,
    ]),
  );
}

function verdict(profiles: Profiles, measurement: LambdaMeasurement): string {
  const leanFixed = bill(profiles.lean, measurement, "batch", 0).fixedUsd;
  const standardFixed = bill(profiles.standard, measurement, "batch", 0).fixedUsd;
  const lean10 = bill(profiles.lean, measurement, "batch", 10e6).totalUsd;
  const breakEven = qstashBreakEven(profiles.lean, measurement);
  const met = (ok: boolean) => (ok ? "**met**" : "**not met**");
  return table(
    ["target (issue 34)", "computed", ""],
    [
      [`lean fixed ≤ ${usd(TARGETS.leanFixed)} a month`, usd(leanFixed), met(leanFixed <= TARGETS.leanFixed)],
      [
        `lean, batch, 10M jobs a month ≤ ${usd(TARGETS.leanBatch10M)}`,
        usd(lean10),
        met(lean10 <= TARGETS.leanBatch10M),
      ],
      [
        `lean cheaper than QStash from ${millions(TARGETS.qstashFrom)} jobs a month`,
        breakEven === undefined ? "never up to 1B" : `from ${millions(breakEven)}`,
        met(breakEven !== undefined && breakEven <= TARGETS.qstashFrom),
      ],
      [
        `standard fixed ≤ ${usd(TARGETS.standardFixed)} a month`,
        usd(standardFixed),
        met(standardFixed <= TARGETS.standardFixed),
      ],
    ],
  );
}

/** docs/cost.md, every figure computed; the prose around them is in prose.ts. */
export function costDocument(
  measurement: LambdaMeasurement,
  profiles: Profiles = { lean: synthesizeProfile("lean"), standard: synthesizeProfile("standard") },
): string {
  const published = publishedTransitions(profiles.lean);
  const notifications =
    published === "all" ? "every transition" : published.length === 0 ? "none" : published.join(", ");
  return [
    prose.header(REGENERATE),
    "## Targets",
    verdict(profiles, measurement),
    "## Side by side",
    prose.sideBySideIntro(ASSUMPTIONS),
    sideBySide(profiles, measurement),
    "## Fixed cost a month, from the synthesized templates",
    prose.fixedIntro(),
    fixedTable(profiles, measurement),
    prose.fixedNotes(PER_TICK, ASSUMPTIONS),
    "## Variable cost per million jobs (lean, at 10M jobs a month)",
    prose.variableIntro(notifications, TRANSITIONS_VARIABLE),
    variableTable(profiles.lean, measurement, 10e6),
    "## Requests per job, per path",
    prose.requestsIntro(),
    requestsTable(),
    prose.unitsExplained(PRICES.dynamoWriteUnit.usd * 2e6),
    "## Lambda, measured in the AWS-shaped mode",
    prose.lambdaIntro(measurement),
    lambdaTable(measurement),
    "## Prices used",
    pricesTable(),
    termsTable(),
    prose.notCounted(PRICES),
  ]
    .join("\n\n")
    .concat("\n");
}
