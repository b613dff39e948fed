import { html, type Html } from "./html.ts";

/** `2026-11-25 14:03:07 UTC`: what the server writes; the browser's script shows it in the viewer's zone (timeCell). */
export function formatTime(value: Date | string | null | undefined): string {
  if (!value) return "—";
  const date = typeof value === "string" ? new Date(value) : value;
  if (Number.isNaN(date.getTime())) return "—";
  return `${date.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/**
 * A <time> element with the machine-readable instant and the UTC text; `data-local` asks the
 * dashboard's script (assets/local-times-script.ts) to show it in the viewer's time zone, so
 * without JavaScript it reads in UTC.
 */
export function timeCell(value: Date | string | null | undefined): Html {
  if (!value) return html`<span class="muted">—</span>`;
  const date = typeof value === "string" ? new Date(value) : value;
  if (Number.isNaN(date.getTime())) return html`<span class="muted">—</span>`;
  return html`<time datetime="${date.toISOString()}" data-local>${formatTime(date)}</time>`;
}

/** A duration as people read it: "340 ms", "1.2 s", "42 s", "3 min 20 s", "3 h 2 min", "2 d 4 h"; "—" for none. */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return "—";
  if (!Number.isFinite(ms) || ms < 0) return "0 ms";
  if (ms < 999.5) return `${Math.round(ms)} ms`;
  if (ms < 9950) return `${(ms / 1000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return pair(minutes, "min", seconds % 60, "s");
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return pair(hours, "h", minutes % 60, "min");
  return pair(Math.floor(hours / 24), "d", hours % 24, "h");
}

const pair = (a: number, aUnit: string, b: number, bUnit: string) => (b === 0 ? `${a} ${aUnit}` : `${a} ${aUnit} ${b} ${bUnit}`);

/** How long ago, relative to `now`: "12 s ago". */
export function formatAge(value: Date | null | undefined, now: Date): string {
  if (!value) return "—";
  return `${formatDuration(Math.max(0, now.getTime() - value.getTime()))} ago`;
}

/** A status as a badge; the class says its colour (status-completed, status-failed …). */
export function statusBadge(status: string): Html {
  return html`<span class="badge status-${status.toLowerCase().replace(/[^a-z_]/g, "")}">${status}</span>`;
}

/** Any JSON value, pretty-printed in a <pre> (escaped: a `<script>` in a payload stays text). */
export function jsonBlock(value: unknown): Html {
  if (value === undefined) return html`<p class="muted">none</p>`;
  let text: string;
  try {
    text = JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    text = String(value);
  }
  return html`<pre class="json">${text}</pre>`;
}

export function tagList(tags: readonly string[]): Html {
  if (tags.length === 0) return html`<span class="muted">—</span>`;
  return html`${tags.map((tag) => html`<span class="tag">${tag}</span> `)}`;
}
