/**
 * HTML built from tagged templates that escape every interpolated value: `html\`<td>${run.id}</td>\``
 * is safe whatever `run.id` holds. Only another `Html` (a template's result, or `trusted(...)` for
 * markup the dashboard itself wrote) goes in unescaped. Arrays are joined, and `null`, `undefined`
 * and `false` render as nothing, so `${cond && html\`…\`}` and `${rows.map(…)}` read naturally.
 */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

export type HtmlValue = Html | string | number | bigint | boolean | null | undefined | readonly HtmlValue[];

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;", "`": "&#96;" };

/** Escapes text for an HTML text node or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (c) => ESCAPES[c]!);
}

function render(value: HtmlValue): string {
  if (value instanceof Html) return value.text;
  if (value === null || value === undefined || value === false) return "";
  if (Array.isArray(value)) return value.map(render).join("");
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1]!;
  return new Html(out);
}

/** Markup the dashboard wrote itself (never anything a user stored). */
export function trusted(markup: string): Html {
  return new Html(markup);
}
