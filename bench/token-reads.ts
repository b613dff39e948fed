import { request } from "./http-client.ts";
import { now } from "./stats.ts";

/** One read: a label and a request that returns its round trip in ms (and throws unless it is as expected). */
export interface ReadCase {
  label: string;
  read(): Promise<number>;
}

/** One `GET /api/v1/waitpoints/tokens` with `query`, as the dev environment's secret key. */
export function tokenLister(apiUrl: string, key: string) {
  return async (query: Record<string, string>) => {
    const url = new URL("/api/v1/waitpoints/tokens", apiUrl);
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    const t0 = now();
    const res = await request(url.toString(), { headers: { authorization: `Bearer ${key}` } });
    const ms = now() - t0;
    if (res.status !== 200) throw new Error(`GET ${url.pathname}${url.search}: ${res.status} ${res.text.slice(0, 300)}`);
    const body = JSON.parse(res.text) as { data: unknown[]; pagination: { next?: string } };
    return { ms, count: body.data.length, next: body.pagination.next };
  };
}

/**
 * The token list's cases (`GET /api/v1/waitpoints/tokens` with each of its filters, and a page
 * reached through `pages` next cursors), over the preload of bench/run-list-preload.ts:
 * `idempotencyKey` is a key one of the environment's tokens holds; `loadedAt` anchors the window.
 */
export async function tokenReadCases(
  list: ReturnType<typeof tokenLister>,
  options: { loadedAt: Date; idempotencyKey: string | undefined; pages: number },
): Promise<ReadCase[]> {
  const out: ReadCase[] = tokenQueries(options).map(([label, query]) => ({ label: `tokens: ${label}`, read: async () => (await list(query)).ms }));
  const cursor = await deepCursor(list, options.pages);
  if (cursor) out.push({ label: `tokens: page ${options.pages + 1} through next cursors`, read: async () => (await list({ "page[after]": cursor })).ms });
  return out;
}

/** The `next` cursor after `pages` pages of the unfiltered list (undefined when it has fewer). */
export async function deepCursor(list: ReturnType<typeof tokenLister>, pages: number): Promise<string | undefined> {
  let cursor: string | undefined;
  for (let p = 0; p < pages; p++) cursor = (await list(cursor ? { "page[after]": cursor } : {})).next;
  return cursor;
}

/** Each filter case: a label and its query string's parameters. */
export function tokenQueries(options: { loadedAt: Date; idempotencyKey: string | undefined }): [string, Record<string, string>][] {
  return [
    ["first page, no filter", {}],
    ["status=COMPLETED", { "filter[status]": "COMPLETED" }],
    ["status=WAITING", { "filter[status]": "WAITING" }],
    ["nothing: status=TIMED_OUT", { "filter[status]": "TIMED_OUT" }],
    ["tag (tok-07)", { "filter[tags]": "tok-07" }],
    ["idempotency key", { "filter[idempotencyKey]": options.idempotencyKey ?? "none" }],
    ["created in the last day", { "filter[createdAt][period]": "1d" }],
    ["created one day, 10 days ago", { "filter[createdAt][from]": iso(options.loadedAt, 11), "filter[createdAt][to]": iso(options.loadedAt, 10) }],
  ];
}

const iso = (at: Date, daysAgo: number) => new Date(at.getTime() - daysAgo * 86_400_000).toISOString();
