import { request, type TextResponse } from "./http-client.ts";
import { now } from "./stats.ts";

/** The run list's filters as the dashboard page names them; the API target translates them. */
export interface RunListFilter {
  status?: string;
  task?: string;
  tag?: string;
  batch?: string;
  schedule?: string;
  queue?: string;
  session?: string;
  version?: string;
  /** "true" or "false": filter[isTest]. */
  test?: string;
  from?: string;
  to?: string;
}

export interface ListedPage {
  /** Request sent → response read, at the client. */
  clientMs: number;
  /** The server's own figure (`Server-Timing: app;dur=`), when it sends one. */
  serverMs: number | null;
  /** Runs on the page. */
  runs: number;
  next: string | null;
}

/** Where the run list is read: the API (`GET /api/v1/runs`) or the dashboard's page. */
export interface RunListTarget {
  name: string;
  page(filter: RunListFilter, cursor?: string): Promise<ListedPage>;
}

/** `GET /api/v1/runs` with the environment's secret key (JSON: data, pagination.next). */
export function apiRunList(apiUrl: string, secretKey: string): RunListTarget {
  const names: Record<keyof RunListFilter, string> = {
    status: "filter[status]", task: "filter[taskIdentifier]", tag: "filter[tag]", batch: "filter[batch]", schedule: "filter[schedule]",
    queue: "filter[queue]", session: "filter[session]", version: "filter[version]", test: "filter[isTest]", from: "filter[createdAt][from]", to: "filter[createdAt][to]",
  };
  return {
    name: "API, GET /api/v1/runs",
    async page(filter, cursor) {
      const url = new URL("/api/v1/runs", apiUrl);
      for (const [key, value] of Object.entries(filter)) if (value !== undefined) url.searchParams.set(names[key as keyof RunListFilter], value);
      if (cursor) url.searchParams.set("page[after]", cursor);
      const t0 = now();
      const res = await request(url.toString(), { headers: { authorization: `Bearer ${secretKey}` } });
      const clientMs = now() - t0;
      if (res.status !== 200) throw new Error(`GET ${url.pathname}${url.search}: ${res.status} ${res.text.slice(0, 300)}`);
      const body = JSON.parse(res.text) as { data: unknown[]; pagination: { next?: string } };
      return { clientMs, serverMs: serverTiming(res), runs: body.data.length, next: body.pagination.next ?? null };
    },
  };
}

/**
 * The dashboard's page `GET /dashboard/{projectRef}/{env}/runs`, signed in with a personal access
 * token as a browser would be (the login form's CSRF cookie and field, then the session cookie).
 * Runs are counted by their distinct ids in the HTML; the next page is its "Older" link (`after=`).
 */
export async function dashboardRunList(apiUrl: string, projectRef: string, envSlug: string, pat: string): Promise<RunListTarget> {
  const jar = new Map<string, string>();
  const keep = (res: TextResponse) => {
    for (const cookie of [res.headers["set-cookie"] ?? []].flat()) {
      const [pair] = cookie.split(";");
      const eq = pair!.indexOf("=");
      jar.set(pair!.slice(0, eq).trim(), pair!.slice(eq + 1).trim());
    }
  };
  const cookies = () => [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
  const form = await request(new URL("/dashboard/login", apiUrl).toString());
  if (form.status !== 200) throw new Error(`GET /dashboard/login: ${form.status}`);
  keep(form);
  const csrf = /name="_csrf"[^>]*value="([^"]+)"|value="([^"]+)"[^>]*name="_csrf"/.exec(form.text);
  if (!csrf) throw new Error("GET /dashboard/login: no _csrf field in the form");
  const body = new URLSearchParams({ token: pat, _csrf: csrf[1] ?? csrf[2]! }).toString();
  const signedIn = await request(new URL("/dashboard/login", apiUrl).toString(), {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie: cookies() },
    body,
  });
  if (signedIn.status !== 303) throw new Error(`POST /dashboard/login: ${signedIn.status} ${signedIn.text.slice(0, 300)}`);
  keep(signedIn);
  if (!jar.has("svc_dashboard")) throw new Error("POST /dashboard/login: no svc_dashboard cookie");
  return {
    name: `dashboard page, GET /dashboard/{projectRef}/${envSlug}/runs`,
    async page(filter, cursor) {
      const url = new URL(`/dashboard/${projectRef}/${envSlug}/runs`, apiUrl);
      for (const [key, value] of Object.entries(filter)) if (value !== undefined) url.searchParams.set(key, value);
      if (cursor) url.searchParams.set("after", cursor);
      const t0 = now();
      const res = await request(url.toString(), { headers: { cookie: cookies() } });
      const clientMs = now() - t0;
      if (res.status !== 200) throw new Error(`GET ${url.pathname}${url.search}: ${res.status} ${res.text.slice(0, 300)}`);
      const next = /[?&](?:amp;)?after=([^"&#\s]+)/.exec(res.text);
      return {
        clientMs,
        serverMs: serverTiming(res),
        runs: new Set(res.text.match(/run_[0-9a-z]{21}/g) ?? []).size,
        next: next ? decodeURIComponent(next[1]!) : null,
      };
    },
  };
}

/** Whether this API process serves the dashboard (its login page answers). */
export async function hasDashboard(apiUrl: string): Promise<boolean> {
  return (await request(new URL("/dashboard/login", apiUrl).toString())).status === 200;
}

function serverTiming(res: TextResponse): number | null {
  const header = res.headers["server-timing"];
  const match = header ? /(?:^|,)\s*app;dur=([\d.]+)/.exec([header].flat().join(",")) : null;
  return match ? Number(match[1]) : null;
}
