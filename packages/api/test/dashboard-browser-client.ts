import type { FastifyInstance, LightMyRequestResponse } from "fastify";

/**
 * A browser as far as the dashboard can tell, over `app.inject`: keeps the cookies the dashboard
 * sets (path /dashboard) and sends forms as application/x-www-form-urlencoded. Redirects are not
 * followed, so tests see each 303.
 */
export class DashboardBrowser {
  readonly cookies = new Map<string, string>();
  /** `remoteAddress`: the client address the app sees (127.0.0.1 unless given). */
  constructor(
    private readonly app: FastifyInstance,
    private readonly remoteAddress?: string,
  ) {}

  private remember(res: LightMyRequestResponse) {
    for (const cookie of res.cookies as { name: string; value: string; maxAge?: number; expires?: Date }[]) {
      const cleared = cookie.value === "" || cookie.maxAge === 0 || (cookie.expires && cookie.expires.getTime() < Date.now());
      if (cleared) this.cookies.delete(cookie.name);
      else this.cookies.set(cookie.name, cookie.value);
    }
    return res;
  }

  private cookieHeader(): Record<string, string> {
    return this.cookies.size ? { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ") } : {};
  }

  async get(url: string, headers: Record<string, string> = {}) {
    return this.remember(await this.app.inject({ method: "GET", url, headers: { ...this.cookieHeader(), ...headers }, ...(this.remoteAddress ? { remoteAddress: this.remoteAddress } : {}) }));
  }

  async post(url: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
    return this.remember(
      await this.app.inject({
        method: "POST",
        url,
        headers: { ...this.cookieHeader(), "content-type": "application/x-www-form-urlencoded", ...headers },
        payload: new URLSearchParams(fields).toString(),
        ...(this.remoteAddress ? { remoteAddress: this.remoteAddress } : {}),
      }),
    );
  }

  /** The value of a hidden `_csrf` (or any named) input in a page. */
  static field(page: string, name: string): string {
    const match = new RegExp(`name="${name}" value="([^"]*)"`).exec(page);
    if (!match) throw new Error(`no ${name} field in the page`);
    return match[1]!;
  }

  /** Signs in through the form with `token`; returns the response to the POST. */
  async signIn(token: string, next?: string) {
    const form = await this.get(`/dashboard/login${next ? `?next=${encodeURIComponent(next)}` : ""}`);
    return this.post("/dashboard/login", { _csrf: DashboardBrowser.field(form.body, "_csrf"), token, ...(next ? { next } : {}) });
  }
}
