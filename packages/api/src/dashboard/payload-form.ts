import { parseJsonText, ValidationError } from "@svc/runtime/engine";
import { html, type Html } from "./html.ts";

/**
 * Largest payload the Test and Replay forms send (the form itself may be up to 1 MiB, register.ts):
 * a payload past it belongs in code (`tasks.trigger`), which offloads large payloads as packets.
 */
export const MAX_FORM_PAYLOAD_BYTES = 512 * 1024;

/** Longest payload a form is prefilled with; a longer one starts the form from `{}`. */
const MAX_PREFILL_CHARS = 64 * 1024;

/** A payload as the form's textarea starts: pretty JSON, or null when there is none to show or it is too long. */
export function prefillText(value: unknown): string | null {
  if (value === undefined) return null;
  const text = JSON.stringify(value, null, 2);
  if (text === undefined || text.length > MAX_PREFILL_CHARS) return null;
  return text;
}

/** The checked JSON text of a payload field, or the problem to show beside the form (and its status). */
export type PayloadField = { ok: true; text: string } | { ok: false; problem: string; status: number };

/**
 * Reads a form's payload: browsers send a textarea's line breaks as CRLF, which are turned back into
 * LF. Empty, too large, too deep, not JSON or not storable text are problems, never errors: the page
 * shows them with what was typed.
 */
export function readPayloadField(raw: string | undefined): PayloadField {
  const text = (raw ?? "").replace(/\r\n?/g, "\n");
  if (text.trim() === "") return { ok: false, problem: "The payload is empty: type JSON ({} for an empty object, null for none).", status: 400 };
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > MAX_FORM_PAYLOAD_BYTES) {
    return { ok: false, problem: `The payload is ${bytes} bytes; the dashboard sends at most ${MAX_FORM_PAYLOAD_BYTES} (trigger larger payloads from code).`, status: 413 };
  }
  try {
    parseJsonText(text, "Payload");
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    return { ok: false, problem: `${error.message}. Fix it and try again.`, status: 400 };
  }
  return { ok: true, text };
}

/** The textarea of a payload form, with its problem (if any) announced above it. */
export function payloadTextarea(id: string, text: string, problem?: string): Html {
  return html`${problem ? html`<p class="problem" role="alert">${problem}</p>` : null}
<label for="${id}">Payload (JSON)</label>
<textarea id="${id}" name="payload" spellcheck="false">${text}</textarea>`;
}
