/** Percentiles of a sample in ms, formatted for the report. */
export function percentiles(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
  return { n: sorted.length, p50: at(50), p90: at(90), p99: at(99), max: sorted[sorted.length - 1] ?? NaN };
}

/** The median of a few figures (one per round): with an even count, the mean of the middle two, not the upper one. */
export function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function fmt(ms: number): string {
  return ms < 10 ? ms.toFixed(2) : ms.toFixed(1);
}

export function line(label: string, p: ReturnType<typeof percentiles>): string {
  return `${label.padEnd(46)} n=${String(p.n).padEnd(6)} p50 ${fmt(p.p50)} ms  p90 ${fmt(p.p90)} ms  p99 ${fmt(p.p99)} ms  max ${fmt(p.max)} ms`;
}

export function rate(count: number, ms: number): string {
  return `${Math.round((count / ms) * 1000).toLocaleString("en-US")}/s`;
}

export const now = () => performance.now();
