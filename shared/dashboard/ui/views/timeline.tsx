import { useState } from "preact/hooks";
import { api } from "../api.ts";
import { Choice, ErrorNote, Loading, Section } from "../components/bits.tsx";
import { Chart, PALETTE } from "../components/chart.tsx";
import { count, duration } from "../format.ts";
import { usePoll } from "../poll.ts";
import type { Horizon, Timeline as TimelineBody } from "../types.ts";

const HORIZONS = [
  { value: "hour", label: "Next hour" },
  { value: "day", label: "Next day" },
  { value: "week", label: "Next week" },
  { value: "year", label: "Next year" },
] as const;

/** Pending work by due time, stacked by type, so a wall of work is visible before it arrives. */
export function Timeline() {
  const [horizon, setHorizon] = useState<Horizon>("day");
  const timeline = usePoll(() => api<TimelineBody>(`v1/timeline?horizon=${horizon}`), 3_000, [horizon]);
  const t = timeline.data;
  return (
    <>
      <h1 tabIndex={-1}>Timeline</h1>
      <Choice legend="Horizon" options={HORIZONS} value={horizon} onChange={setHorizon} />
      <ErrorNote error={timeline.error} what="the timeline" />
      {!t && !timeline.error && <Loading what="the timeline" />}
      {t && <TimelineChart timeline={t} />}
    </>
  );
}

function TimelineChart({ timeline }: { timeline: TimelineBody }) {
  const types = Object.keys(timeline.types).sort();
  const overdueTypes = Object.keys(timeline.overdue).sort();
  const from = Date.parse(timeline.from) / 1000;
  const buckets = timeline.types[types[0] ?? ""]?.length ?? 0;
  const x = Array.from({ length: buckets }, (_, i) => from + i * timeline.bucketSeconds);
  const totals = types.map((type) => timeline.types[type]!.reduce((a, b) => a + b, 0));
  const all = totals.reduce((a, b) => a + b, 0);
  const label = `Pending events due by ${duration(timeline.bucketSeconds * 1000)} bucket: ${types
    .map((type, i) => `${type} ${totals[i]}`)
    .join(", ")}.`;
  return (
    <Section title={`Pending work, ${count(all)} events`}>
      {timeline.truncated && (
        <p class="banner warn" role="status">
          The index holds more work in this horizon than one read takes: the chart shows part of it.
        </p>
      )}
      {types.length === 0 ? (
        <p class="muted">Nothing pending in this horizon.</p>
      ) : (
        <Chart
          label={label}
          x={x}
          stacked
          height={260}
          series={types.map((type, i) => ({
            label: type,
            color: PALETTE[i % PALETTE.length]!,
            values: timeline.types[type]!,
          }))}
        />
      )}
      <table>
        <caption class="sr-only">Pending and overdue events by type</caption>
        <thead>
          <tr>
            <th scope="col">type</th>
            <th scope="col" class="num">
              pending in horizon
            </th>
            <th scope="col" class="num">
              overdue, not yet claimed
            </th>
          </tr>
        </thead>
        <tbody>
          {[...new Set([...types, ...overdueTypes])].sort().map((type) => (
            <tr key={type}>
              <th scope="row">{type}</th>
              <td class="num">{count(totals[types.indexOf(type)])}</td>
              <td class="num">{count(timeline.overdue[type])}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </Section>
  );
}
