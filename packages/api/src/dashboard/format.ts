import { html, type Html } from "./html.ts";

/** `2026-11-25 14:03:07 UTC` (the dashboard shows UTC everywhere, so every viewer reads the same time). */
export function formatTime(value: Date | string | null | undefined): string {
  if (!value) return "—";
  const date = typeof value === "string" ? new Date(value) : value;
  if (Number.isNaN(date.getTime())) return "—";
  return `${date.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/** A <time> element with the machine-readable instant and the UTC text. */
export function timeCell(value: Date | string | null | undefined): Html {
  if (!value) return html`<span class="muted">—</span>`;
  const date = typeof value === "string" ? new Date(value) : value;
  return html`<time datetime="${date.toISOString()}">${formatTime(date)}</time>`;
}

/** 340 ms, 1.2 s, 4 min 10 s, 3 h 2 min, 2 d 4 h. */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  const min = Math.floor(s / 60);
  if (min < 60) return `${min} min ${Math.round(s % 60)} s`;
  const h = Math.floor(min / 60);
  if (h < 48) return `${h} h ${min % 60} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

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
