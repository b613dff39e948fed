import type { TestApi } from "./harness.ts";

/** A create body for the `chat-agent` task; `extra` overrides fields. */
export function sessionBody(extra: Record<string, unknown> = {}) {
  return { type: "chat.agent", taskIdentifier: "chat-agent", triggerConfig: { basePayload: { chatId: "c1" } }, ...extra };
}

export async function createSession(api: TestApi, extra: Record<string, unknown> = {}, headers: Record<string, string> = api.devAuth) {
  return api.app.inject({ method: "POST", url: "/api/v1/sessions", headers, payload: sessionBody(extra) });
}

export async function createSessionOk(api: TestApi, extra: Record<string, unknown> = {}) {
  const res = await createSession(api, extra);
  if (res.statusCode !== 201 && res.statusCode !== 200) throw new Error(`create session: ${res.statusCode} ${res.body}`);
  return res.json() as { id: string; externalId: string | null; runId: string; publicAccessToken: string; isCached: boolean; [key: string]: unknown };
}

export async function append(api: TestApi, ref: string, io: "in" | "out", body: string, headers: Record<string, string> = api.devAuth) {
  return api.app.inject({
    method: "POST",
    url: `/realtime/v1/sessions/${encodeURIComponent(ref)}/${io}/append`,
    headers: { "content-type": "application/json", ...headers },
    payload: body,
  });
}

export async function drain(api: TestApi, ref: string, io: "in" | "out", afterEventId?: number | string, headers: Record<string, string> = api.devAuth) {
  const query = afterEventId === undefined ? "" : `?afterEventId=${afterEventId}`;
  return api.app.inject({ method: "GET", url: `/realtime/v1/sessions/${encodeURIComponent(ref)}/${io}/records${query}`, headers });
}

export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}
