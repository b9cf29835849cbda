import { useState } from "preact/hooks";
import { api } from "../api.ts";
import { Choice, ErrorNote, Loading, Section } from "../components/bits.tsx";
import { Chart, PALETTE } from "../components/chart.tsx";
import { count, duration, ms } from "../format.ts";
import { usePoll } from "../poll.ts";
import { type Metrics, STATUSES, type Stats, type TypeMetrics } from "../types.ts";

const WINDOWS = [
  { value: "1h", label: "Last hour" },
  { value: "24h", label: "Last 24 hours" },
] as const;

/** Counts by status and type from /v1/stats; throughput and lateness from /v1/metrics. */
export function Overview() {
  const stats = usePoll(() => api<Stats>("v1/stats"), 1_500, []);
  const [window, setWindow] = useState<"1h" | "24h">("1h");
  const metrics = usePoll(() => api<Metrics>(`v1/metrics?window=${window}`), 5_000, [window]);
  const s = stats.data;
  return (
    <>
      <h1 tabIndex={-1}>Overview</h1>
      <ErrorNote error={stats.error} what="the statistics" />
      {!s && !stats.error && <Loading what="statistics" />}
      {s && <StatsPanel stats={s} />}
      <Section title="Throughput and lateness">
        <Choice legend="Window" options={WINDOWS} value={window} onChange={setWindow} />
        <ErrorNote error={metrics.error} what="the metrics" />
        {metrics.data ? (
          <MetricsPanel metrics={metrics.data} />
        ) : (
          !metrics.error && <Loading what="metrics" />
        )}
      </Section>
    </>
  );
}

function StatsPanel({ stats }: { stats: Stats }) {
  const types = Object.keys(stats.byType).sort();
  return (
    <>
      {stats.paused !== undefined && (
        <p class={stats.paused ? "banner warn" : "banner"} role="status" data-testid="paused">
          {stats.paused
            ? "Dispatch is paused: nothing new starts until it is resumed."
            : "Dispatch is running."}
        </p>
      )}
      <Section title="Events by status">
        <ul class="cards">
          {STATUSES.map((status) => (
            <li key={status} class={`card s-${status}`} data-testid={`count-${status}`}>
              <span class="label">{status}</span>
              <span class="value">{count(stats.byStatus[status])}</span>
            </li>
          ))}
          <li class={`card ${stats.oldestOverdueMs > 5_000 ? "late" : ""}`} data-testid="oldest-overdue">
            <span class="label">oldest overdue</span>
            <span class="value">{stats.oldestOverdueMs > 0 ? duration(stats.oldestOverdueMs) : "none"}</span>
          </li>
          <li class="card" data-testid="index-size">
            <span class="label">in the index</span>
            <span class="value">{count(stats.indexSize)}</span>
          </li>
          {stats.quarantined !== undefined && (
            <li class={`card ${stats.quarantined > 0 ? "late" : ""}`} data-testid="quarantined">
              <span class="label">quarantined</span>
              <span class="value">{count(stats.quarantined)}</span>
            </li>
          )}
        </ul>
      </Section>
      <Section title="Events by type">
        {types.length === 0 ? (
          <p class="muted">No events yet.</p>
        ) : (
          <div class="scroll">
            <table>
              <thead>
                <tr>
                  <th scope="col">type</th>
                  {STATUSES.map((status) => (
                    <th scope="col" class="num" key={status}>
                      {status}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {types.map((type) => (
                  <tr key={type} data-testid={`type-${type}`}>
                    <th scope="row">
                      <a href={`#/events?type=${encodeURIComponent(type)}`}>{type}</a>
                    </th>
                    {STATUSES.map((status) => (
                      <td class="num" key={status}>
                        {count(stats.byType[type]?.[status])}
                      </td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Section>
    </>
  );
}

function MetricsPanel({ metrics }: { metrics: Metrics }) {
  const from = Date.parse(metrics.from) / 1000;
  const x = metrics.total.created.map((_, i) => from + i * metrics.stepSeconds);
  const t = metrics.total;
  const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
  const types = Object.entries(metrics.types);
  return (
    <div class="grid">
      <div>
        <h3>Throughput per minute</h3>
        <Chart
          label={`Events per minute: ${sum(t.created)} created, ${sum(t.started)} started, ${sum(t.succeeded)} succeeded, ${sum(t.failed)} failed, ${sum(t.givenBack)} given back in the window.`}
          x={x}
          series={[
            { label: "created", color: PALETTE[0]!, values: t.created },
            { label: "started", color: PALETTE[5]!, values: t.started },
            { label: "succeeded", color: PALETTE[1]!, values: t.succeeded },
            { label: "failed", color: PALETTE[2]!, values: t.failed },
            { label: "given back", color: PALETTE[3]!, values: t.givenBack },
          ]}
        />
      </div>
      <div>
        <h3>Lateness at start, per minute</h3>
        <Chart
          label={`Lateness at handler start: p50 ${ms(t.lateness.lastHour.p50Ms)}, p99 ${ms(t.lateness.lastHour.p99Ms)} over the last hour.`}
          x={x}
          unit=" ms"
          points
          series={[
            { label: "p50", color: PALETTE[0]!, values: t.latenessP50Ms },
            { label: "p99", color: PALETTE[3]!, values: t.latenessP99Ms },
          ]}
        />
      </div>
      <div>
        <h3>Lateness histogram</h3>
        <Histogram buckets={t.lateness.histogram} />
      </div>
      <div>
        <h3>Lateness by type</h3>
        {types.length === 0 ? (
          <p class="muted">Nothing has run in the last day.</p>
        ) : (
          <LatenessTable types={types} />
        )}
      </div>
    </div>
  );
}

function Histogram({ buckets }: { buckets: TypeMetrics["lateness"]["histogram"] }) {
  if (buckets.length === 0) return <p class="muted">Nothing started in this window.</p>;
  const max = Math.max(...buckets.map((b) => b.count));
  return (
    <table class="histogram">
      <caption class="sr-only">Handler starts by lateness</caption>
      <thead>
        <tr>
          <th scope="col">late by at most</th>
          <th scope="col">starts</th>
        </tr>
      </thead>
      <tbody>
        {buckets.map((b) => (
          <tr key={b.upToMs}>
            <th scope="row" class="num">
              {duration(b.upToMs)}
            </th>
            <td>
              <span class="bar" style={{ width: `${Math.max(1, (b.count / max) * 100)}%` }} />
              <span class="num">{count(b.count)}</span>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function LatenessTable({ types }: { types: [string, TypeMetrics][] }) {
  return (
    <div class="scroll">
      <table>
        <thead>
          <tr>
            <th scope="col">type</th>
            <th scope="col" class="num">
              p50 (1 h)
            </th>
            <th scope="col" class="num">
              p99 (1 h)
            </th>
            <th scope="col" class="num">
              p50 (24 h)
            </th>
            <th scope="col" class="num">
              p99 (24 h)
            </th>
            <th scope="col" class="num">
              starts (24 h)
            </th>
          </tr>
        </thead>
        <tbody>
          {types.map(([type, m]) => (
            <tr key={type}>
              <th scope="row">{type}</th>
              <td class="num">{ms(m.lateness.lastHour.p50Ms)}</td>
              <td class="num">{ms(m.lateness.lastHour.p99Ms)}</td>
              <td class="num">{ms(m.lateness.lastDay.p50Ms)}</td>
              <td class="num">{ms(m.lateness.lastDay.p99Ms)}</td>
              <td class="num">{count(m.lateness.lastDay.count)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
