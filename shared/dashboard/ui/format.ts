/** Times as people read them: a duration in the largest sensible unit, and "in 5 min" / "3 s ago". */
export function duration(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < 1_000) return `${Math.round(abs)} ms`;
  if (abs < 60_000) return `${(abs / 1_000).toFixed(abs < 10_000 ? 1 : 0)} s`;
  if (abs < 3_600_000) return `${Math.round(abs / 60_000)} min`;
  if (abs < 86_400_000) return `${(abs / 3_600_000).toFixed(1)} h`;
  return `${(abs / 86_400_000).toFixed(1)} d`;
}

export function relative(iso: string, now = Date.now()): string {
  const delta = Date.parse(iso) - now;
  if (Math.abs(delta) < 1_000) return "now";
  return delta > 0 ? `in ${duration(delta)}` : `${duration(delta)} ago`;
}

/** `2026-12-01 03:04:05 UTC`: the API's times are UTC, and so is what the page shows. */
export function utc(iso: string): string {
  return `${iso.slice(0, 19).replace("T", " ")} UTC`;
}

export function ms(value: number | null | undefined): string {
  return value === null || value === undefined ? "–" : duration(value);
}

export function count(value: number | undefined): string {
  return (value ?? 0).toLocaleString("en-US");
}
