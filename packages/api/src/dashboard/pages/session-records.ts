import type { SessionRecordPreviewRow } from "@svc/runtime/engine";
import { html, type Html } from "../html.ts";
import { timeCell } from "../format.ts";

/** Records of each channel the session page shows: the latest, in the page and as it streams (the script drops older rows). */
export const RECORDS_SHOWN = 200;
/** Characters of a record's text the page shows; the rest is cut (a record may be 1 MiB). */
export const RECORD_PREVIEW_CHARS = 2048;

/**
 * How a record's value reads: a string as itself (pretty-printed when it holds a JSON object or
 * array, which is what the SDK sends), any other value as pretty JSON. The page's script
 * (assets/session-records-script.ts) shows streamed records the same way.
 */
export function recordText(value: unknown): string {
  if (typeof value === "string") {
    const trimmed = value.trim();
    if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
      try {
        return JSON.stringify(JSON.parse(trimmed), null, 2);
      } catch {
        return value;
      }
    }
    return value;
  }
  return JSON.stringify(value, null, 2) ?? String(value);
}

function pre(text: string, whole: string | null): Html {
  return html`<pre class="json">${text}</pre>${whole ? html`<p class="muted">… cut (the whole record is ${whole})</p>` : null}`;
}

function bodyCell(row: SessionRecordPreviewRow): Html {
  if (row.data === null) return html`<span class="muted">control record</span>`;
  // The database cut a long record's text: it is no longer whole JSON, so it is shown as stored.
  if (row.data_cut) return pre(row.data, `${row.data_bytes} bytes`);
  let text: string;
  try {
    text = recordText(JSON.parse(row.data));
  } catch {
    text = row.data;
  }
  return text.length > RECORD_PREVIEW_CHARS ? pre(text.slice(0, RECORD_PREVIEW_CHARS), `${text.length} characters`) : pre(text, null);
}

function recordRow(row: SessionRecordPreviewRow): Html {
  return html`<tr data-seq="${row.seq}">
<td class="mono">${row.seq}</td>
<td>${timeCell(row.created_at)}</td>
<td>${(row.headers ?? []).map(([name, value]) => html`<span class="tag">${name}: ${value}</span> `)}</td>
<td>${bodyCell(row)}</td>
</tr>`;
}

/** The last sequence number shown of a channel (0: none): where its live part resumes. */
export function lastShownSeq(rows: readonly SessionRecordPreviewRow[]): number {
  return rows.length === 0 ? 0 : Number(rows[rows.length - 1]!.seq);
}

/** One channel's latest records as a table; `data-last-seq` is where the live part continues. */
export function channelRecords(io: "in" | "out", rows: readonly SessionRecordPreviewRow[], lastSeq: string): Html {
  return html`<section class="card"><h2>.${io} <span class="muted">latest ${RECORDS_SHOWN} shown, last seq <span data-records-last="${io}">${lastSeq}</span></span></h2>
<div class="records" data-records-box="${io}"><table><thead><tr><th>Seq</th><th>Time</th><th>Headers</th><th>Body</th></tr></thead>
<tbody data-records-io="${io}" data-last-seq="${lastShownSeq(rows)}">${rows.length === 0 ? html`<tr class="empty"><td colspan="4" class="muted">No records yet.</td></tr>` : rows.map(recordRow)}</tbody></table></div>
</section>`;
}
