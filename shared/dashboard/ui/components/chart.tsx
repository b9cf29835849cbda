import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import { useResolvedTheme } from "../theme.ts";

export interface ChartSeries {
  readonly label: string;
  readonly color: string;
  readonly values: (number | null)[];
}

interface Props {
  /** Read by screen readers in place of the canvas: say what the chart shows, with its figures. */
  readonly label: string;
  /** Epoch seconds, one per value. */
  readonly x: number[];
  readonly series: readonly ChartSeries[];
  readonly stacked?: boolean;
  readonly height?: number;
  readonly unit?: string;
  /** Mark every value: for sparse series, where a lone minute would draw no line at all. */
  readonly points?: boolean;
}

export const PALETTE = [
  "#2f6fde",
  "#1d9a55",
  "#d4443a",
  "#c7850c",
  "#8250df",
  "#118fa8",
  "#c43c8b",
  "#5f8f12",
];

/**
 * A uPlot chart: lines, or bars stacked by drawing cumulative sums from the tallest down. Built
 * again when the set of series or the theme changes; otherwise only its data is replaced.
 */
export function Chart({ label, x, series, stacked = false, height = 220, unit = "", points = false }: Props) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const theme = useResolvedTheme();
  const shape = `${theme}|${stacked}|${series.map((s) => s.label).join(",")}`;

  const data = (): uPlot.AlignedData => {
    if (!stacked) return [x, ...series.map((s) => s.values)];
    const sums: number[][] = [];
    let running = x.map(() => 0);
    for (const s of series) {
      running = running.map((v, i) => v + (s.values[i] ?? 0));
      sums.push(running);
    }
    return [x, ...sums.reverse()];
  };

  // Rebuilt only when the shape changes; new data alone goes through setData below.
  useEffect(() => {
    const element = box.current;
    if (!element) return;
    const style = getComputedStyle(document.documentElement);
    const fg = style.getPropertyValue("--muted").trim() || "#666";
    const grid = style.getPropertyValue("--grid").trim() || "#ddd";
    const axis = { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    const drawn = stacked ? [...series].reverse() : series;
    const bars = uPlot.paths.bars?.({ size: [0.8, 40] });
    const options: uPlot.Options = {
      width: Math.max(200, element.clientWidth),
      height,
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] } },
      axes: [axis, { ...axis, size: 60, values: (_u, ticks) => ticks.map((t) => `${t}${unit}`) }],
      series: [
        {},
        ...drawn.map((s) => ({
          label: s.label,
          stroke: s.color,
          width: stacked ? 0 : 2,
          ...(stacked && { fill: s.color, ...(bars && { paths: bars }) }),
          spanGaps: false,
          points: { show: points && !stacked, size: 6 },
        })),
      ],
    };
    plot.current = new uPlot(options, data(), element);
    const resize = new ResizeObserver(() =>
      plot.current?.setSize({ width: Math.max(200, element.clientWidth), height }),
    );
    resize.observe(element);
    return () => {
      resize.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
  }, [shape]);

  useEffect(() => {
    plot.current?.setData(data());
  });

  return (
    <figure class="chart">
      <div ref={box} role="img" aria-label={label} />
      <figcaption class="legend">
        {series.map((s) => (
          <span key={s.label}>
            <i class="swatch" style={{ background: s.color }} aria-hidden="true" />
            {s.label}
          </span>
        ))}
      </figcaption>
    </figure>
  );
}
