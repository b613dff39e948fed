import { z } from "zod";
import { isStorableDate, ValidationError } from "@svc/runtime/engine";

const OPAQUE_CURSOR = "An opaque cursor: `pagination.next` / `pagination.previous` of a page this API returned, as is. Any other value is a 400.";
/** Parameters cannot exclude each other in an OpenAPI document: each says so in words. */
const notWith = (other: string) => `${OPAQUE_CURSOR} Not together with ${other} (a 400).`;

/** Cursor pages (Trigger.dev): page[size] 1–100, page[after] / page[before] opaque cursors. */
export const CursorPageQuery = z.object({
  "page[size]": z.coerce.number().int().min(1).max(100).optional(),
  "page[after]": z.string().min(1).describe(notWith("page[before]")).optional(),
  "page[before]": z.string().min(1).describe(notWith("page[after]")).optional(),
});

export interface Cursor {
  /** created_at in epoch ms */
  c: number;
  /** row id */
  r: string;
}

/** base64url JSON `{c, r}`: a position in (created_at DESC, id DESC) order. */
export function encodeCursor(createdAt: Date, id: string): string {
  return Buffer.from(JSON.stringify({ c: createdAt.getTime(), r: id } satisfies Cursor)).toString("base64url");
}

export function decodeCursor(value: string, param: string): { createdAt: Date; id: string } {
  try {
    const parsed = JSON.parse(Buffer.from(value, "base64url").toString("utf8")) as Cursor;
    if (typeof parsed.c !== "number" || typeof parsed.r !== "string") throw new Error("shape");
    // Values Postgres would refuse (an invalid date, a NUL) are not ours either.
    const createdAt = new Date(parsed.c);
    if (!isStorableDate(createdAt) || parsed.r.includes("\u0000")) throw new Error("value");
    return { createdAt, id: parsed.r };
  } catch {
    throw new ValidationError(`${param}: not a cursor returned by this API`);
  }
}

export interface Page<T> {
  data: T[];
  pagination: { next?: string; previous?: string };
}

/**
 * Runs one page query in (created_at DESC, id DESC) order. `fetch` receives the keyset condition
 * and must return up to `limit` rows sorted in the direction it is given ("desc" for after/first
 * page, "asc" for before). Omits `next`/`previous` when there is no such page (never null).
 */
export async function keysetPage<R extends { created_at: Date; id: string }, T>(
  query: z.infer<typeof CursorPageQuery>,
  defaultSize: number,
  fetch: (keyset: { sql: string; values: unknown[] } | null, direction: "desc" | "asc", limit: number) => Promise<R[]>,
  present: (row: R) => T,
): Promise<Page<T>> {
  if (query["page[after]"] && query["page[before]"]) throw new ValidationError("page[after] and page[before] cannot be used together");
  const size = query["page[size]"] ?? defaultSize;
  if (query["page[before]"]) {
    const cur = decodeCursor(query["page[before]"], "page[before]");
    const rows = await fetch({ sql: "(created_at, id) > ($1, $2)", values: [cur.createdAt, cur.id] }, "asc", size + 1);
    const hasMore = rows.length > size;
    const page = rows.slice(0, size).reverse();
    return finish(page, hasMore, true);
  }
  const after = query["page[after]"] ? decodeCursor(query["page[after]"], "page[after]") : null;
  const rows = await fetch(after ? { sql: "(created_at, id) < ($1, $2)", values: [after.createdAt, after.id] } : null, "desc", size + 1);
  return finish(rows.slice(0, size), rows.length > size, false, after !== null);

  function finish(page: R[], hasMore: boolean, backwards: boolean, cameFromAfter = false): Page<T> {
    const pagination: Page<T>["pagination"] = {};
    const first = page[0];
    const last = page[page.length - 1];
    if (last && (backwards || hasMore)) pagination.next = encodeCursor(last.created_at, last.id);
    if (first && (backwards ? hasMore : cameFromAfter)) pagination.previous = encodeCursor(first.created_at, first.id);
    return { data: page.map(present), pagination };
  }
}
