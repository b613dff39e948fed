// Shared set-up for the client tests: the real API on a loopback port, plus a few lookups.
import type { AddressInfo } from "node:net";
import { startTestApi, type TestApi } from "./harness.ts";

export interface ListeningApi extends TestApi {
  baseURL: string;
}

/** Starts the in-process API on a free loopback port (its presigned URLs point there too). */
export async function startListeningApi(options: Parameters<typeof startTestApi>[0] = {}): Promise<ListeningApi> {
  const api = await startTestApi(options);
  await api.app.listen({ port: 0, host: "127.0.0.1" });
  const { port } = api.app.server.address() as AddressInfo;
  const baseURL = `http://127.0.0.1:${port}`;
  (api.engine as { apiUrl: string }).apiUrl = baseURL;
  return Object.assign(api, { baseURL });
}

/** The environment a run was created in, as the server recorded it. */
export async function environmentOfRun(api: TestApi, runId: string): Promise<string> {
  const { rows } = await api.db.pool.query<{ environment_id: string }>("SELECT environment_id FROM runs WHERE id = $1", [runId]);
  if (!rows[0]) throw new Error(`run ${runId} not found in the database`);
  return rows[0].environment_id;
}

/** Retry settings that keep failing tests fast: one attempt. */
export const NO_RETRY = { retry: { maxAttempts: 1 } };

/** Clears the SERVICE_* variables so a test starts from a known environment. */
export function clearServiceEnvironment(): void {
  delete process.env.SERVICE_SECRET_KEY;
  delete process.env.SERVICE_API_URL;
  delete process.env.SERVICE_PREVIEW_BRANCH;
}
