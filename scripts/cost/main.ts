/**
 * `npm run cost`: the monthly bill of a Hourglass deployment, from its synthesized template, the
 * measured requests per job and the prices in scripts/cost/prices.ts.
 *
 *   npm run cost -- --profile lean --jobs 10M --path batch [--json]
 *   npm run cost -- --markdown          # docs/cost.md on stdout
 *   npm run cost -- --write-docs        # regenerates docs/cost.md
 */
import { writeFileSync } from "node:fs";
import Table from "cli-table3";
import { Command, InvalidArgumentError, Option } from "commander";
import { bill, qstashUsd, schedulerUsd } from "./bill.ts";
import { costDocument, DOC_PATH } from "./markdown.ts";
import { lambdaMeasurement, PATHS, type Path } from "./measured.ts";
import { synthesizeProfile } from "./template.ts";

const SUFFIX: Record<string, number> = { "": 1, k: 1e3, m: 1e6, b: 1e9 };

/** "10M", "2.5m", "300k", "1000000" → jobs a month. */
export function parseJobs(value: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*([kmb]?)$/i.exec(value.trim());
  if (!match) throw new InvalidArgumentError("expected a number of jobs a month, like 1M, 250k or 3000000");
  return Number(match[1]) * (SUFFIX[match[2]!.toLowerCase()] ?? 1);
}

const options = new Command("cost")
  .description("the monthly AWS bill of a Hourglass deployment")
  .addOption(
    new Option("--profile <profile>", "the construct's profile")
      .choices(["standard", "lean"])
      .default("lean"),
  )
  .option("--jobs <count>", "jobs a month (1M, 250k, …)", parseJobs, 10e6)
  .addOption(
    new Option("--path <path>", "how jobs are submitted and end").choices([...PATHS]).default("batch"),
  )
  .option("--json", "the bill as JSON")
  .option("--markdown", "print docs/cost.md")
  .option("--write-docs", "write docs/cost.md")
  .parse()
  .opts<{
    profile: "standard" | "lean";
    jobs: number;
    path: Path;
    json?: boolean;
    markdown?: boolean;
    writeDocs?: boolean;
  }>();

const measurement = lambdaMeasurement();
if (options.markdown || options.writeDocs) {
  const document = costDocument(measurement);
  if (options.writeDocs) writeFileSync(DOC_PATH, document);
  else process.stdout.write(document);
} else {
  const result = bill(synthesizeProfile(options.profile), measurement, options.path, options.jobs);
  const alternatives = {
    qstashUsd: qstashUsd(options.jobs),
    eventBridgeSchedulerUsd: schedulerUsd(options.jobs),
  };
  if (options.json) {
    process.stdout.write(
      `${JSON.stringify({ profile: options.profile, ...result, ...alternatives }, null, 2)}\n`,
    );
  } else {
    const table = new Table({ head: ["item", "what", "$ a month"] });
    for (const l of result.fixed) table.push([l.item, l.detail, l.usd.toFixed(2)]);
    table.push(["fixed", "", result.fixedUsd.toFixed(2)]);
    for (const l of result.variable) table.push([l.item, l.detail, l.usd.toFixed(2)]);
    table.push(["variable", "", result.variableUsd.toFixed(2)]);
    const jobs = options.jobs.toLocaleString("en-US");
    console.log(`${options.profile} profile, ${jobs} jobs a month, ${options.path} path (us-east-1)`);
    console.log(table.toString());
    console.log(`total: $${result.totalUsd.toFixed(2)} a month`);
    console.log(
      `beside: QStash pay as you go $${alternatives.qstashUsd.toFixed(2)}; EventBridge Scheduler + a 128 MB sender Lambda $${alternatives.eventBridgeSchedulerUsd.toFixed(2)}`,
    );
  }
}
