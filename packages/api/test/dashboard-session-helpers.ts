import { getEnvironment, type Environment } from "@svc/runtime/engine";
import { startListeningApi, type ListeningApi } from "./client-server.ts";
import { createUserWithPat } from "./credentials-fixtures.ts";
import { DashboardBrowser } from "./dashboard-browser-client.ts";
import { sseItems, type SseRecord } from "./sse-reader.ts";

/** The API on a loopback port with a project member signed in to the dashboard. */
export interface SignedInDashboard {
  api: ListeningApi;
  browser: DashboardBrowser;
  /** The default project's dev environment. */
  env: Environment;
  /** `/dashboard/{ref}/dev/sessions` */
  base: string;
  /** Opens a session page's stream as the browser's EventSource would: its cookie, optionally Last-Event-ID. */
  openStream(url: string, headers?: Record<string, string>): Promise<Response>;
}

export async function startSignedInDashboard(): Promise<SignedInDashboard> {
  const api = await startListeningApi();
  const ref = api.project.projectRef;
  const env = (await getEnvironment(api.db.pool, api.project.environments.dev.id))!;
  const member = await createUserWithPat(api, "member@example.com", { memberOf: [ref] });
  const browser = new DashboardBrowser(api.app);
  const signedIn = await browser.signIn(member.pat);
  if (signedIn.statusCode !== 303) throw new Error(`sign-in: ${signedIn.statusCode}`);
  const openStream = (url: string, headers: Record<string, string> = {}) =>
    fetch(`${api.baseURL}${url}`, { headers: { accept: "text/event-stream", cookie: cookieHeader(browser), ...headers } });
  return { api, browser, env, base: `/dashboard/${ref}/dev/sessions`, openStream };
}

/** One event of the session page's stream: `in` / `out` with their records, or `end`. */
export interface PageStreamEvent {
  event: string;
  id: string | undefined;
  records: SseRecord[];
}

/** The signed-in browser's cookie header, for a request made outside `app.inject` (fetch to a listening server). */
export function cookieHeader(browser: DashboardBrowser): string {
  return [...browser.cookies].map(([name, value]) => `${name}=${value}`).join("; ");
}

/** The stream URL the session page hands its script (`data-records-stream`), unescaped. */
export function streamUrlOf(page: string): string | null {
  const match = /data-records-stream="([^"]*)"/.exec(page);
  return match ? match[1]!.replaceAll("&amp;", "&") : null;
}

/** The sequence numbers of the records a session page shows of one channel, in order. */
export function rowsOf(page: string, io: "in" | "out"): number[] {
  const body = new RegExp(`<tbody data-records-io="${io}"[^>]*>([\\s\\S]*?)</tbody>`).exec(page)![1]!;
  return [...body.matchAll(/<tr data-seq="(\d+)">/g)].map((m) => Number(m[1]));
}

/**
 * Reads the session page's event stream as the browser's EventSource would: named events with
 * their ids; comment lines and the `retry:` line are not events. `next(n)` resolves with the next n.
 */
export function pageStreamEvents(response: Response) {
  return sseItems<PageStreamEvent>(response, (frame) => {
    const event = /^event: (.*)$/m.exec(frame)?.[1];
    if (!event) return [];
    const data = /^data: (.*)$/m.exec(frame)?.[1] ?? "";
    const records = event === "in" || event === "out" ? (JSON.parse(data).records as SseRecord[]) : [];
    return [{ event, id: /^id: (.*)$/m.exec(frame)?.[1], records }];
  });
}
