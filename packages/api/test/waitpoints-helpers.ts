import type { TestApi } from "./harness.ts";

/** POST /api/v1/waitpoints/tokens with the dev key. */
export function createTokenRequest(api: TestApi, body: unknown, headers: Record<string, string> = api.devAuth) {
  return api.app.inject({ method: "POST", url: "/api/v1/waitpoints/tokens", headers, payload: body as object });
}

/** Creates a token and returns the response body, failing the test on a non-200. */
export async function createTokenOk(api: TestApi, body: unknown = {}): Promise<{ id: string; isCached: boolean; url: string; publicAccessToken: string }> {
  const res = await createTokenRequest(api, body);
  if (res.statusCode !== 200) throw new Error(`create token: ${res.statusCode} ${res.body}`);
  return res.json();
}

export function completeRequest(api: TestApi, id: string, body: unknown, headers: Record<string, string> = api.devAuth) {
  return api.app.inject({ method: "POST", url: `/api/v1/waitpoints/tokens/${id}/complete`, headers, payload: body as object });
}

export async function tokenRow(api: TestApi, id: string) {
  const { rows } = await api.db.pool.query(`SELECT * FROM waitpoints WHERE id = $1`, [id]);
  return rows[0];
}

export { ledgerRow, listenForResumes, resumeDue, waitingRunOn } from "@svc/runtime/testing";
