import type { TestApi } from "./harness.ts";

/** What a worker writes at start: the task exists in the environment (kind SCHEDULED for schedules.task). */
export async function registerTask(api: TestApi, environmentId: string, taskId: string, kind: "SCHEDULED" | "STANDARD" = "SCHEDULED") {
  await api.db.pool.query(
    `INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, kind, worker_version)
     VALUES ($1, $2, $3, $4, 'test') ON CONFLICT (environment_id, task_identifier) DO UPDATE SET kind = EXCLUDED.kind`,
    [environmentId, taskId, `task/${taskId}`, kind],
  );
}

/** `app.inject` with the dev secret key, JSON in and out. */
export function scheduleClient(api: TestApi, headers: Record<string, string> = api.devAuth) {
  const call = (method: "GET" | "POST" | "PUT" | "DELETE", url: string, payload?: unknown) =>
    api.app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload: payload as object }) });
  return {
    create: (body: unknown) => call("POST", "/api/v1/schedules", body),
    list: (query = "") => call("GET", `/api/v1/schedules${query}`),
    retrieve: (id: string) => call("GET", `/api/v1/schedules/${encodeURIComponent(id)}`),
    update: (id: string, body: unknown) => call("PUT", `/api/v1/schedules/${encodeURIComponent(id)}`, body),
    activate: (id: string) => call("POST", `/api/v1/schedules/${encodeURIComponent(id)}/activate`),
    deactivate: (id: string) => call("POST", `/api/v1/schedules/${encodeURIComponent(id)}/deactivate`),
    del: (id: string) => call("DELETE", `/api/v1/schedules/${encodeURIComponent(id)}`),
  };
}
