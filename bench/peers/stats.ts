/**
 * The arithmetic of `npm run bench:peers` (bench/peers/run.ts): medians, percentiles, the order in
 * which rounds visit the systems, ratios against ours, and the printed table and summary lines.
 * Tested in test/node/bench/peers-stats.test.ts.
 */

export type SystemName = "ours" | "langgraph" | "aichat" | "bare_do";

export const SYSTEMS: readonly SystemName[] = ["ours", "langgraph", "aichat", "bare_do"];

/** Which way is better for a metric: lower (latency, bytes, fsyncs) or higher (throughput). */
export type Better = "lower" | "higher";

export interface Metric {
  /** Summary-line key, e.g. "fresh_turn_ms". */
  key: string;
  /** Table row label. */
  label: string;
  unit: string;
  better: Better;
  /** One value per system measured; a missing system prints as "–". */
  values: Partial<Record<SystemName, number>>;
}

/** The p-th percentile (0..100) by nearest rank; NaN for no samples. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * s.length);
  return s[Math.min(s.length, Math.max(1, rank)) - 1]!;
}

/** The median: the mean of the two middle samples for an even count. */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/**
 * The systems in the order round `round` visits them: rotated by one each round, so no system
 * always runs first (on a cold cache) or last (after the others warmed the machine).
 */
export function roundOrder<T>(items: readonly T[], round: number): T[] {
  if (items.length === 0) return [];
  const k = round % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}

/** The best peer's value (lowest or highest, as the metric prefers), or undefined with no peers. */
export function bestPeer(m: Metric): { name: SystemName; value: number } | undefined {
  let best: { name: SystemName; value: number } | undefined;
  for (const name of SYSTEMS) {
    const v = m.values[name];
    if (name === "ours" || v === undefined || Number.isNaN(v)) continue;
    if (!best || (m.better === "lower" ? v < best.value : v > best.value)) best = { name, value: v };
  }
  return best;
}

/** peer ÷ ours, as the table prints it; undefined when either side is missing or ours is 0. */
export function ratio(peer: number | undefined, ours: number | undefined): number | undefined {
  if (peer === undefined || ours === undefined || ours === 0 || Number.isNaN(peer) || Number.isNaN(ours)) return undefined;
  return peer / ours;
}

export function formatValue(v: number | undefined): string {
  if (v === undefined || Number.isNaN(v)) return "–";
  if (Math.abs(v) >= 1000) return Math.round(v).toLocaleString("en-US");
  if (Math.abs(v) >= 100) return v.toFixed(0);
  if (Math.abs(v) >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

function formatRatio(r: number | undefined): string {
  return r === undefined ? "" : ` (${r.toFixed(2)}x)`;
}

/** A Markdown table: one row per metric, one column per system; peers show peer ÷ ours. */
export function formatTable(metrics: readonly Metric[], systems: readonly SystemName[] = SYSTEMS): string {
  const head = `| metric | ${systems.join(" | ")} |`;
  const rule = `|---|${systems.map(() => "---").join("|")}|`;
  const rows = metrics.map((m) => {
    const cells = systems.map((s) => {
      const v = m.values[s];
      return formatValue(v) + (s === "ours" ? "" : formatRatio(ratio(v, m.values.ours)));
    });
    return `| ${m.label} (${m.unit}) | ${cells.join(" | ")} |`;
  });
  return [head, rule, ...rows].join("\n");
}

/** `bench peers <key> ours=… langgraph=… aichat=… bare_do=… ratio_best_peer=…` (best peer ÷ ours). */
export function summaryLine(m: Metric): string {
  const parts = SYSTEMS.filter((s) => m.values[s] !== undefined).map((s) => `${s}=${formatValue(m.values[s]).replace(/,/g, "")}`);
  const best = bestPeer(m);
  const r = ratio(best?.value, m.values.ours);
  parts.push(`ratio_best_peer=${r === undefined ? "–" : r.toFixed(2)}`);
  if (best) parts.push(`best_peer=${best.name}`);
  return `bench peers ${m.key} ${parts.join(" ")}`;
}
