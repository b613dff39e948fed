import { createEnvironmentVariable, getEnvironment, registerQueues, type ProjectCredentials } from "@svc/runtime/engine";
import type { MatrixFixtures } from "./auth-matrix-table.ts";
import { bearer } from "./credentials-fixtures.ts";
import type { TestApi } from "./harness.ts";

/** Schedules need their task registered (as a scheduled task) by a worker of each environment. */
export async function registerScheduledTask(api: TestApi, projects: ProjectCredentials[], task: string): Promise<void> {
  for (const project of projects) {
    for (const env of Object.values(project.environments)) {
      await api.db.pool.query(
        `INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, kind, worker_version) VALUES ($1, $2, $3, 'SCHEDULED', '1')`,
        [env.id, task, `task/${task}`],
      );
    }
  }
}

/** Resources of `owner`'s dev environment for the auth-matrix table's request builders. */
export function makeMatrixFixtures(api: TestApi, owner: ProjectCredentials, options: { task: string; marker: string }): MatrixFixtures {
  const { task, marker } = options;
  const post = async (url: string, payload: object) => {
    const res = await api.app.inject({ method: "POST", url, headers: bearer(owner.environments.dev.secretKey), payload });
    if (res.statusCode >= 300) throw new Error(`fixture ${url} failed: ${res.statusCode} ${res.body}`);
    return res.json();
  };
  let counter = 0;
  const shared = new Map<string, Promise<unknown>>();
  const once = <T>(key: string, make: () => Promise<T>, reuse?: boolean): Promise<T> => {
    if (!reuse) return make();
    if (!shared.has(key)) shared.set(key, make());
    return shared.get(key) as Promise<T>;
  };
  const unique = (prefix: string) => `${prefix}_${++counter}${Math.random().toString(36).slice(2, 8)}`;
  return {
    projectRef: owner.projectRef,
    task,
    marker,
    unique,
    run: (reuse) => once("run", async () => (await post(`/api/v1/tasks/${task}/trigger`, { payload: { secret: marker }, options: { tags: [marker] } })).id, reuse),
    delayedRun: async () => (await post(`/api/v1/tasks/${task}/trigger`, { payload: { secret: marker }, options: { delay: "1h" } })).id,
    storedRun: async () => {
      const path = `matrix/${unique("stored")}/payload.json`;
      const presign = await api.app.inject({ method: "PUT", url: `/api/v2/packets/${encodeURIComponent(path)}`, headers: bearer(owner.environments.dev.secretKey) });
      const upload = await api.app.inject({ method: "PUT", url: new URL(presign.json().presignedUrl).pathname, headers: { "content-type": "application/json" }, payload: JSON.stringify({ secret: marker }) });
      if (upload.statusCode !== 200) throw new Error(`packet upload failed: ${upload.body}`);
      return (await post(`/api/v1/tasks/${task}/trigger`, { payload: path, options: { payloadType: "application/store" } })).id;
    },
    idempotentRun: async () => {
      const key = unique("idem");
      return { runId: (await post(`/api/v1/tasks/${task}/trigger`, { payload: {}, options: { idempotencyKey: key } })).id, key };
    },
    batch: async () => (await post("/api/v3/batches", { runCount: 1, taskIdentifiers: [task] })).id,
    bulkAction: (reuse) => once("bulkAction", async () => (await post("/api/v1/bulk-actions", { action: "replay", runIds: ["run_matrix"], name: marker })).id, reuse),
    token: (reuse) => once("token", async () => (await post("/api/v1/waitpoints/tokens", { timeout: "1h", tags: [marker] })).id, reuse),
    schedule: (reuse) =>
      once("schedule", async () => (await post("/api/v1/schedules", { task, cron: "0 * * * *", externalId: marker, deduplicationKey: unique("dk") })).id, reuse),
    variable: (reuse) =>
      once("variable", async () => {
        const name = unique("MATRIX_VAR");
        const env = (await getEnvironment(api.db.pool, owner.environments.dev.id))!;
        await createEnvironmentVariable(api.db.pool, api.engine.secrets, env, { name, value: marker }, new Date());
        return name;
      }, reuse),
    queue: (reuse) =>
      once("queue", async () => {
        const name = unique(`${marker}-queue`);
        const env = owner.environments.dev.id;
        await registerQueues(api.db.pool, env, [name], new Date());
        const { rows } = await api.db.pool.query<{ id: string }>(`SELECT id FROM queues WHERE environment_id = $1 AND name = $2`, [env, name]);
        return rows[0]!.id;
      }, reuse),
    concurrencyLimit: (reuse) =>
      once("concurrencyLimit", async () => {
        // The shared one (the list's) is named after the marker; a fresh one is not, since the
        // routes that name a limit answer with its name, whoever asks.
        const name = reuse ? unique(`${marker}-climit`) : unique("climit");
        await post(`/api/v1/concurrency-limits/${name}/override`, { total: 2 });
        return name;
      }, reuse),
    session: (reuse) =>
      once("session", async () => {
        const body = { type: "chat.agent", externalId: unique("chat"), taskIdentifier: task, triggerConfig: { basePayload: { secret: marker } }, tags: [marker], metadata: { secret: marker } };
        const created = await post("/api/v1/sessions", body);
        return { id: created.id, externalId: created.externalId, runId: created.runId };
      }, reuse),
    cancel: async (runId) => {
      await post(`/api/v2/runs/${runId}/cancel`, {});
    },
    packet: async () => {
      const path = `matrix/${unique("pk")}/payload.json`;
      const presign = await api.app.inject({ method: "PUT", url: `/api/v2/packets/${encodeURIComponent(path)}`, headers: bearer(owner.environments.dev.secretKey) });
      const uploadUrl = new URL(presign.json().presignedUrl);
      const upload = await api.app.inject({ method: "PUT", url: uploadUrl.pathname, headers: { "content-type": "application/json" }, payload: JSON.stringify({ secret: marker }) });
      if (upload.statusCode !== 200) throw new Error(`packet upload failed: ${upload.body}`);
      return path;
    },
  };
}
