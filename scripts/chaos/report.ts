import Table from "cli-table3";
import type { CheckReport } from "./checker.ts";

/** The soak's summary as tables: faults injected, operations, lateness, then every violation. */
export function formatReport(report: CheckReport, header: string): string {
  const lines = [header];
  const faults = new Table({ head: ["fault", "count"] });
  for (const [kind, count] of Object.entries(report.faults)) faults.push([kind, String(count)]);
  lines.push(faults.toString());

  const ops = new Table({ head: ["operation", "count"] });
  for (const [name, count] of Object.entries(report.operations).sort()) ops.push([name, String(count)]);
  ops.push(["(answers lost: unknown)", String(report.unknownAnswers)]);
  lines.push(ops.toString());

  const { lateness, events } = report;
  const late = new Table({
    head: ["events accepted", "delivered", "deliveries", "first-delivery lateness p50", "p99", "max"],
  });
  late.push([
    String(events.accepted),
    String(events.delivered),
    String(events.deliveries),
    `${lateness.p50} ms`,
    `${lateness.p99} ms`,
    `${lateness.max} ms`,
  ]);
  lines.push(late.toString());

  if (report.violations.length === 0) lines.push("violations: 0");
  else {
    const byRule = new Table({ head: ["violated rule", "count"] });
    const counts = new Map<string, number>();
    for (const v of report.violations) counts.set(v.rule, (counts.get(v.rule) ?? 0) + 1);
    for (const [rule, count] of counts) byRule.push([rule, String(count)]);
    lines.push(byRule.toString());
    for (const v of report.violations) {
      lines.push(`\n✗ ${v.rule}: ${v.subject}: ${v.message}`);
      for (const line of v.story) lines.push(`    ${line}`);
    }
  }
  return lines.join("\n");
}
