import { spanIdOf } from "@svc/runtime/engine";
import type { CredentialKind } from "../src/auth/principal.ts";

/**
 * The per-route half of the auth matrix: which credential kinds a route accepts, what it acts on,
 * and how to build a valid request. Every authenticated route registered in the app must have an
 * entry here (the matrix test fails otherwise), so a new route gets its credentials checked.
 *
 * `target` decides what a valid credential of an accepted kind gets when it belongs to a
 * different environment or project than the fixture (which lives in project A, env dev):
 * - "resource": a path naming one of A/dev's resources → 404 (it does not exist for them);
 * - "collection": lists and creates act on the caller's own environment → success, without A's data;
 * - "project": a path naming A's project and env (`/projects/{ref}/…`) → 403.
 */
export interface MatrixRequest {
  url: string;
  payload?: string | object;
  contentType?: string;
  /** A JWT scope that grants this request (JWT routes only). */
  scope?: string;
  /** A well-formed scope that does not grant it. */
  wrongScope?: string;
}

export interface MatrixFixtures {
  projectRef: string;
  task: string;
  marker: string;
  /** A run of A/dev (tags and payload carry the marker); fresh on every call unless `shared`. */
  run(shared?: boolean): Promise<string>;
  /** A run of A/dev delayed by an hour (fresh on every call). */
  delayedRun(): Promise<string>;
  /** A run of A/dev whose payload is a stored packet (fresh on every call). */
  storedRun(): Promise<string>;
  /** A run of A/dev triggered with a fresh idempotency key, and that key. */
  idempotentRun(): Promise<{ runId: string; key: string }>;
  batch(): Promise<string>;
  /** A PENDING bulk action of A/dev (named with the marker; no worker works on it); fresh unless `shared`. */
  bulkAction(shared?: boolean): Promise<string>;
  token(shared?: boolean): Promise<string>;
  schedule(shared?: boolean): Promise<string>;
  variable(shared?: boolean): Promise<string>;
  /** The `queue_…` id of a queue of A/dev named after the marker, as a worker registers one; fresh unless `shared`. */
  queue(shared?: boolean): Promise<string>;
  packet(): Promise<string>;
  /** The name of a named concurrency limit of A/dev, set through the API; fresh unless `shared` (the shared one is named after the marker). */
  concurrencyLimit(shared?: boolean): Promise<string>;
  /** A session of A/dev with an externalId (its tags and metadata carry the marker); fresh unless `shared`. */
  session(shared?: boolean): Promise<{ id: string; externalId: string; runId: string }>;
  /** Cancels a run of A/dev (with A's secret key). */
  cancel(runId: string): Promise<void>;
  unique(prefix: string): string;
}

export type MatrixEntry =
  | { unauthenticated: true; why: string }
  | {
      unauthenticated?: false;
      kinds: CredentialKind[];
      target: "resource" | "collection" | "project";
      success: number;
      /** A list whose A/dev answer must show the fixture marker (proves the leak check can fail). */
      listShowsMarker?: boolean;
      build(fx: MatrixFixtures): Promise<MatrixRequest>;
    };

const SK: CredentialKind[] = ["secretKey"];
const SK_JWT: CredentialKind[] = ["secretKey", "publicJwt"];
const SK_PAT: CredentialKind[] = ["secretKey", "personalAccessToken"];
const envvars = (fx: MatrixFixtures, rest = "") => `/api/v1/projects/${fx.projectRef}/envvars/dev${rest}`;
const sessionBody = (fx: MatrixFixtures, externalId: string) => ({ type: "chat.agent", externalId, taskIdentifier: fx.task, triggerConfig: { basePayload: { n: 1 } } });
const ndjson = (task: string, marker: string) => `${JSON.stringify({ index: 0, task, payload: JSON.stringify({ m: marker }), options: { payloadType: "application/json" } })}\n`;

export const MATRIX: Record<string, MatrixEntry> = {
  // Tasks and batches (trigger scopes for JWTs).
  "POST /api/v1/tasks/:taskId/trigger": {
    kinds: SK_JWT, target: "collection", success: 200,
    build: async (fx) => ({ url: `/api/v1/tasks/${fx.task}/trigger`, payload: { payload: { n: 1 } }, scope: `trigger:tasks:${fx.task}`, wrongScope: "trigger:tasks:some-other-task" }),
  },
  "POST /api/v3/batches": {
    kinds: SK_JWT, target: "collection", success: 202,
    build: async (fx) => ({ url: "/api/v3/batches", payload: { runCount: 1, taskIdentifiers: [fx.task] }, scope: `batchTrigger:tasks:${fx.task}`, wrongScope: "batchTrigger:tasks:some-other-task" }),
  },
  "POST /api/v3/batches/:batchId/items": {
    kinds: SK_JWT, target: "resource", success: 200,
    build: async (fx) => ({
      url: `/api/v3/batches/${await fx.batch()}/items`,
      payload: ndjson(fx.task, "items"),
      contentType: "application/x-ndjson",
      scope: `batchTrigger:tasks:${fx.task}`,
      wrongScope: "batchTrigger:tasks:some-other-task",
    }),
  },
  "POST /api/v2/tasks/batch": {
    kinds: SK_JWT, target: "collection", success: 202,
    build: async (fx) => ({ url: "/api/v2/tasks/batch", payload: { items: [{ task: fx.task, payload: { n: 1 } }] }, scope: `batchTrigger:tasks:${fx.task}`, wrongScope: "batchTrigger:tasks:some-other-task" }),
  },
  "GET /api/v2/batches/:batchId": {
    kinds: SK_JWT, target: "resource", success: 200,
    build: async (fx) => {
      const id = await fx.batch();
      return { url: `/api/v2/batches/${id}`, scope: `read:batch:${id}`, wrongScope: "read:batch:batch_someotherbatch" };
    },
  },

  // Runs.
  // Bulk actions (secret keys only, as replay).
  "POST /api/v1/bulk-actions": {
    kinds: SK, target: "collection", success: 200,
    build: async (fx) => ({ url: "/api/v1/bulk-actions", payload: { action: "cancel", runIds: ["run_matrix"] } }),
  },
  "GET /api/v1/bulk-actions": {
    kinds: SK, target: "collection", success: 200, listShowsMarker: true,
    build: async (fx) => {
      await fx.bulkAction(true);
      return { url: "/api/v1/bulk-actions" };
    },
  },
  "GET /api/v1/bulk-actions/:bulkActionId": {
    kinds: SK, target: "resource", success: 200,
    build: async (fx) => ({ url: `/api/v1/bulk-actions/${await fx.bulkAction(true)}` }),
  },
  "POST /api/v1/bulk-actions/:bulkActionId/abort": {
    kinds: SK, target: "resource", success: 200,
    build: async (fx) => ({ url: `/api/v1/bulk-actions/${await fx.bulkAction()}/abort`, payload: {} }),
  },
  "GET /api/v1/runs": {
    kinds: SK_JWT, target: "collection", success: 200, listShowsMarker: true,
    build: async (fx) => {
      await fx.run(true);
      return { url: "/api/v1/runs", scope: "read:runs", wrongScope: "read:batch:batch_someotherbatch" };
    },
  },
  "GET /api/v3/runs/:runId": {
    kinds: SK_JWT, target: "resource", success: 200,
    build: async (fx) => {
      const id = await fx.run(true);
      return { url: `/api/v3/runs/${id}`, scope: `read:runs:${id}`, wrongScope: "read:runs:run_someotherrun" };
    },
  },
  "POST /api/v2/runs/:runId/cancel": {
    kinds: SK_JWT, target: "resource", success: 200,
    build: async (fx) => {
      const id = await fx.run();
      return { url: `/api/v2/runs/${id}/cancel`, scope: `write:runs:${id}`, wrongScope: `read:runs:${id}` };
    },
  },
  "POST /api/v1/runs/:runId/replay": {
    kinds: SK, target: "resource", success: 200,
    build: async (fx) => ({ url: `/api/v1/runs/${await fx.run(true)}/replay` }),
  },
  "GET /api/v1/runs/:runId/ledger": {
    kinds: SK, target: "resource", success: 200,
    build: async (fx) => ({ url: `/api/v1/runs/${await fx.run(true)}/ledger` }),
  },
  "GET /api/v1/projects/:projectRef/runs": {
    kinds: ["personalAccessToken"], target: "project", success: 200, listShowsMarker: true,
    build: async (fx) => {
      await fx.run(true);
      return { url: `/api/v1/projects/${fx.projectRef}/runs?filter[env]=dev` };
    },
  },
  "POST /api/v1/runs/:runId/reschedule": {
    kinds: SK, target: "resource", success: 200,
    build: async (fx) => ({ url: `/api/v1/runs/${await fx.delayedRun()}/reschedule`, payload: { delay: "2h" } }),
  },
  "POST /api/v1/runs/:runId/tags": {
    kinds: SK, target: "resource", success: 200,
    build: async (fx) => ({ url: `/api/v1/runs/${await fx.run()}/tags`, payload: { tags: ["matrix-tag"] } }),
  },
  "GET /api/v1/runs/:runId/metadata": {
    kinds: SK_JWT, target: "resource", success: 200,
    build: async (fx) => {
      const id = await fx.run(true);
      return { url: `/api/v1/runs/${id}/metadata`, scope: `read:runs:${id}`, wrongScope: "read:runs:run_someotherrun" };
    },
  },
  "PUT /api/v1/runs/:runId/metadata": {
    kinds: SK, target: "resource", success: 200,
    build: async (fx) => ({ url: `/api/v1/runs/${await fx.run()}/metadata`, payload: { operations: [{ type: "set", key: "matrix", value: 1 }] } }),
  },
  "GET /api/v1/runs/:runId/result": {
    kinds: SK, target: "resource", success: 200,
    build: async (fx) => {
      const id = await fx.run();
      await fx.cancel(id);
      return { url: `/api/v1/runs/${id}/result` };
    },
  },
  "GET /api/v1/batches/:batchId/results": {
    kinds: SK, target: "resource", success: 200,
    build: async (fx) => ({ url: `/api/v1/batches/${await fx.batch()}/results` }),
  },
  "GET /api/v1/runs/:runId/packets/:field": {
    kinds: SK_JWT, target: "resource", success: 200,
    build: async (fx) => {
      const id = await fx.storedRun();
      return { url: `/api/v1/runs/${id}/packets/payload`, scope: `read:runs:${id}`, wrongScope: "read:runs:run_someotherrun" };
    },
  },
  "GET /api/v1/runs/:runId/trace": {
    kinds: SK_JWT, target: "resource", success: 200,
    build: async (fx) => {
      const id = await fx.run(true);
      return { url: `/api/v1/runs/${id}/trace`, scope: `read:runs:${id}`, wrongScope: "read:runs:run_someotherrun" };
    },
  },
  "GET /api/v1/runs/:runId/spans/:spanId": {
    kinds: SK_JWT, target: "resource", success: 200,
    build: async (fx) => {
      const id = await fx.run(true);
      return { url: `/api/v1/runs/${id}/spans/${spanIdOf(id, "run")}`, scope: `read:tasks:${fx.task}`, wrongScope: "read:tasks:some-other-task" };
    },
  },
  "GET /api/v1/runs/:runId/events": {
    kinds: SK_JWT, target: "resource", success: 200,
    build: async (fx) => {
      const id = await fx.run(true);
      return { url: `/api/v1/runs/${id}/events`, scope: `read:tags:${fx.marker}`, wrongScope: "read:tags:some-other-tag" };
    },
  },
  "POST /api/v1/idempotencyKeys/:key/reset": {
    kinds: SK_JWT, target: "resource", success: 200,
    build: async (fx) => {
      const { key } = await fx.idempotentRun();
      return { url: `/api/v1/idempotencyKeys/${key}/reset`, payload: { taskIdentifier: fx.task }, scope: "write:runs", wrongScope: "read:runs" };
    },
  },

  // Packets (large payloads).
  "PUT /api/v2/packets/*": {
    kinds: SK, target: "collection", success: 200,
    build: async (fx) => ({ url: `/api/v2/packets/${encodeURIComponent(`matrix/${fx.unique("p")}/payload.json`)}` }),
  },
  "GET /api/v1/packets/*": {
    kinds: SK, target: "resource", success: 200,
    build: async (fx) => ({ url: `/api/v1/packets/${encodeURIComponent(await fx.packet())}` }),
  },
  "GET /api/v1/packets/download/:token": { unauthenticated: true, why: "the presigned URL is the credential" },
  "PUT /api/v1/packets/upload/:token": { unauthenticated: true, why: "the presigned URL is the credential" },

  // Waitpoint tokens: create/list/retrieve with a secret key; complete also with write:waitpoints.
  "POST /api/v1/waitpoints/tokens": {
    kinds: SK, target: "collection", success: 200,
    build: async () => ({ url: "/api/v1/waitpoints/tokens", payload: { timeout: "1h" } }),
  },
  "GET /api/v1/waitpoints/tokens": {
    kinds: SK, target: "collection", success: 200, listShowsMarker: true,
    build: async (fx) => {
      await fx.token(true);
      return { url: "/api/v1/waitpoints/tokens" };
    },
  },
  "GET /api/v1/waitpoints/tokens/:id": {
    kinds: SK, target: "resource", success: 200,
    build: async (fx) => ({ url: `/api/v1/waitpoints/tokens/${await fx.token(true)}` }),
  },
  "POST /api/v1/waitpoints/tokens/:id/complete": {
    kinds: SK_JWT, target: "resource", success: 200,
    build: async (fx) => {
      const id = await fx.token();
      return { url: `/api/v1/waitpoints/tokens/${id}/complete`, payload: { data: { ok: 1 } }, scope: `write:waitpoints:${id}`, wrongScope: "write:waitpoints:waitpoint_someothertoken" };
    },
  },
  "POST /api/v1/waitpoints/tokens/:id/callback/:hash": { unauthenticated: true, why: "the HMAC in the callback URL is the credential" },

  // Schedules: secret key only.
  "POST /api/v1/schedules": {
    kinds: SK, target: "collection", success: 200,
    build: async (fx) => ({ url: "/api/v1/schedules", payload: { task: fx.task, cron: "0 * * * *", deduplicationKey: fx.unique("dk") } }),
  },
  "GET /api/v1/schedules": {
    kinds: SK, target: "collection", success: 200, listShowsMarker: true,
    build: async (fx) => {
      await fx.schedule(true);
      return { url: "/api/v1/schedules?perPage=100" };
    },
  },
  "GET /api/v1/schedules/:id": {
    kinds: SK, target: "resource", success: 200,
    build: async (fx) => ({ url: `/api/v1/schedules/${await fx.schedule(true)}` }),
  },
  "PUT /api/v1/schedules/:id": {
    kinds: SK, target: "resource", success: 200,
    build: async (fx) => ({ url: `/api/v1/schedules/${await fx.schedule()}`, payload: { task: fx.task, cron: "30 * * * *" } }),
  },
  "POST /api/v1/schedules/:id/activate": {
    kinds: SK, target: "resource", success: 200,
    build: async (fx) => ({ url: `/api/v1/schedules/${await fx.schedule()}/activate` }),
  },
  "POST /api/v1/schedules/:id/deactivate": {
    kinds: SK, target: "resource", success: 200,
    build: async (fx) => ({ url: `/api/v1/schedules/${await fx.schedule()}/deactivate` }),
  },
  "DELETE /api/v1/schedules/:id": {
    kinds: SK, target: "resource", success: 200,
    build: async (fx) => ({ url: `/api/v1/schedules/${await fx.schedule()}` }),
  },
  "GET /api/v1/timezones": { unauthenticated: true, why: "public reference data" },

  // Queues.
  "GET /api/v1/queues": {
    kinds: SK, target: "collection", success: 200, listShowsMarker: true,
    build: async (fx) => {
      await fx.queue(true);
      return { url: "/api/v1/queues?perPage=100" };
    },
  },
  "GET /api/v1/queues/:value": {
    kinds: SK, target: "resource", success: 200,
    build: async (fx) => ({ url: `/api/v1/queues/${await fx.queue(true)}` }),
  },
  "POST /api/v1/queues/:value/pause": {
    kinds: SK, target: "resource", success: 200,
    build: async (fx) => ({ url: `/api/v1/queues/${await fx.queue()}/pause`, payload: { type: "id", action: "pause" } }),
  },
  "POST /api/v1/queues/:value/concurrency/override": {
    kinds: SK, target: "resource", success: 200,
    build: async (fx) => ({ url: `/api/v1/queues/${await fx.queue()}/concurrency/override`, payload: { type: "id", concurrencyLimit: 3 } }),
  },
  "POST /api/v1/queues/:value/concurrency/reset": {
    kinds: SK, target: "resource", success: 200,
    build: async (fx) => ({ url: `/api/v1/queues/${await fx.queue()}/concurrency/reset`, payload: { type: "id" } }),
  },
  "GET /api/v1/concurrency-limits": {
    kinds: SK, target: "collection", success: 200, listShowsMarker: true,
    build: async (fx) => {
      await fx.concurrencyLimit(true);
      return { url: "/api/v1/concurrency-limits?perPage=100" };
    },
  },
  "GET /api/v1/concurrency-limits/:name": {
    kinds: SK, target: "resource", success: 200,
    build: async (fx) => ({ url: `/api/v1/concurrency-limits/${await fx.concurrencyLimit()}` }),
  },
  // Override and pause set a limit of the caller's own environment, creating it when it has none.
  "POST /api/v1/concurrency-limits/:name/override": {
    kinds: SK, target: "collection", success: 200,
    build: async (fx) => ({ url: `/api/v1/concurrency-limits/${await fx.concurrencyLimit()}/override`, payload: { perKey: 1 } }),
  },
  "POST /api/v1/concurrency-limits/:name/pause": {
    kinds: SK, target: "collection", success: 200,
    build: async (fx) => ({ url: `/api/v1/concurrency-limits/${await fx.concurrencyLimit()}/pause`, payload: { action: "pause" } }),
  },
  "POST /api/v1/concurrency-limits/:name/reset": {
    kinds: SK, target: "resource", success: 200,
    build: async (fx) => ({ url: `/api/v1/concurrency-limits/${await fx.concurrencyLimit()}/reset`, payload: {} }),
  },

  // Auth.
  "POST /api/v1/auth/jwt/claims": {
    kinds: SK, target: "collection", success: 200,
    build: async () => ({ url: "/api/v1/auth/jwt/claims" }),
  },
  "POST /api/v1/auth/public-tokens": {
    kinds: SK, target: "collection", success: 200,
    build: async () => ({ url: "/api/v1/auth/public-tokens", payload: { scopes: ["read:runs"] } }),
  },

  // Sessions: public tokens need session scopes (`read:sessions:<id>`, `write:sessions:<id>`);
  // PATCH and close need a secret key (or a bare `admin` JWT). session-scopes.test.ts has the full
  // matrix of session scopes; `.out` appends (secret key only) are there too.
  "POST /api/v1/sessions": {
    kinds: SK_JWT, target: "collection", success: 201,
    build: async (fx) => {
      const externalId = fx.unique("chat");
      return { url: "/api/v1/sessions", payload: sessionBody(fx, externalId), scope: `write:sessions:${externalId}`, wrongScope: `read:sessions:${externalId}` };
    },
  },
  "GET /api/v1/sessions": {
    kinds: SK_JWT, target: "collection", success: 200, listShowsMarker: true,
    build: async (fx) => {
      const { id } = await fx.session(true);
      return { url: "/api/v1/sessions?page[size]=100", scope: "read:sessions", wrongScope: `read:sessions:${id}` };
    },
  },
  "GET /api/v1/sessions/:session": {
    kinds: SK_JWT, target: "resource", success: 200,
    build: async (fx) => {
      const { id } = await fx.session(true);
      return { url: `/api/v1/sessions/${id}`, scope: `read:sessions:${id}`, wrongScope: `write:sessions:${id}` };
    },
  },
  "PATCH /api/v1/sessions/:session": {
    kinds: SK_JWT, target: "resource", success: 200,
    build: async (fx) => {
      const { id } = await fx.session(true);
      return { url: `/api/v1/sessions/${id}`, payload: { tags: [fx.marker, "patched"] }, scope: "admin", wrongScope: `write:sessions:${id}` };
    },
  },
  "POST /api/v1/sessions/:session/close": {
    kinds: SK_JWT, target: "resource", success: 200,
    build: async (fx) => {
      const { id } = await fx.session();
      return { url: `/api/v1/sessions/${id}/close`, payload: { reason: "matrix" }, scope: "admin", wrongScope: `write:sessions:${id}` };
    },
  },
  "POST /api/v1/sessions/:session/end-and-continue": {
    kinds: SK_JWT, target: "resource", success: 200,
    build: async (fx) => {
      // A public token hands over only from a run that has ended (sessions.ts): end it first.
      const { id, runId } = await fx.session();
      await fx.cancel(runId);
      return { url: `/api/v1/sessions/${id}/end-and-continue`, payload: { callingRunId: runId, reason: "matrix" }, scope: `write:sessions:${id}`, wrongScope: `read:sessions:${id}` };
    },
  },
  "GET /api/v1/sessions/:session/runs": {
    kinds: SK_JWT, target: "resource", success: 200,
    build: async (fx) => {
      const { id } = await fx.session(true);
      return { url: `/api/v1/sessions/${id}/runs`, scope: `read:sessions:${id}`, wrongScope: `write:sessions:${id}` };
    },
  },
  "GET /realtime/v1/sessions/:session/:io": {
    kinds: SK_JWT, target: "resource", success: 200,
    build: async (fx) => {
      const { id } = await fx.session(true);
      return { url: `/realtime/v1/sessions/${id}/in`, scope: `read:sessions:${id}`, wrongScope: `write:sessions:${id}` };
    },
  },
  "GET /realtime/v1/sessions/:session/:io/records": {
    kinds: SK_JWT, target: "resource", success: 200,
    build: async (fx) => {
      const { id } = await fx.session(true);
      return { url: `/realtime/v1/sessions/${id}/in/records`, scope: `read:sessions:${id}`, wrongScope: `write:sessions:${id}` };
    },
  },
  "POST /realtime/v1/sessions/:session/:io/append": {
    kinds: SK_JWT, target: "resource", success: 200,
    build: async (fx) => {
      const { id } = await fx.session(true);
      return { url: `/realtime/v1/sessions/${id}/in/append`, payload: `{"text":"hi"}`, contentType: "application/json", scope: `write:sessions:${id}`, wrongScope: `read:sessions:${id}` };
    },
  },

  // A run's realtime and input streams (a finished run's stream ends at once).
  "GET /realtime/v1/streams/:runId/:streamKey": {
    kinds: SK_JWT, target: "resource", success: 200,
    build: async (fx) => {
      const id = await fx.run();
      await fx.cancel(id);
      return { url: `/realtime/v1/streams/${id}/tokens`, scope: `read:runs:${id}`, wrongScope: "read:runs:run_someone_else" };
    },
  },
  "PUT /realtime/v1/streams/:runId/:target/:streamKey": {
    kinds: SK, target: "resource", success: 200,
    build: async (fx) => ({ url: `/realtime/v1/streams/${await fx.run(true)}/self/tokens` }),
  },
  "POST /realtime/v1/streams/:runId/:target/:streamKey/append": {
    kinds: SK, target: "resource", success: 200,
    build: async (fx) => ({ url: `/realtime/v1/streams/${await fx.run(true)}/self/tokens/append`, payload: "hello", contentType: "text/plain" }),
  },
  "POST /realtime/v1/streams/:runId/input/:streamKey": {
    kinds: SK_JWT, target: "resource", success: 200,
    build: async (fx) => {
      const id = await fx.run(true);
      return { url: `/realtime/v1/streams/${id}/input/answer`, payload: { data: { ok: true } }, scope: `write:inputStreams:${id}`, wrongScope: `read:runs:${id}` };
    },
  },
  "POST /api/v1/runs/:runId/input-streams/wait": {
    kinds: SK, target: "resource", success: 200,
    build: async (fx) => ({ url: `/api/v1/runs/${await fx.run(true)}/input-streams/wait`, payload: { streamId: "answer", timeout: "1h" } }),
  },

  // Realtime run subscriptions (ElectricSQL shape protocol): the first request of a subscription.
  "GET /realtime/v1/runs/:runId": {
    kinds: SK_JWT, target: "resource", success: 200,
    build: async (fx) => {
      const runId = await fx.run(true);
      return { url: `/realtime/v1/runs/${runId}?offset=-1`, scope: `read:runs:${runId}`, wrongScope: "read:runs:run_someone_else" };
    },
  },
  "GET /realtime/v1/runs": {
    kinds: SK_JWT, target: "collection", success: 200,
    build: async (fx) => {
      await fx.run(true);
      return { url: `/realtime/v1/runs?tags=${encodeURIComponent(fx.marker)}&offset=-1`, scope: `read:tags:${fx.marker}`, wrongScope: "read:tags:another-tag" };
    },
  },
  "GET /realtime/v1/batches/:batchId": {
    kinds: SK_JWT, target: "resource", success: 200,
    build: async (fx) => {
      const batchId = await fx.batch();
      return { url: `/realtime/v1/batches/${batchId}?offset=-1`, scope: `read:batch:${batchId}`, wrongScope: "read:batch:batch_someone_else" };
    },
  },

  // Environment variables: a secret key of that environment, or a PAT of a member.
  "GET /api/v1/projects/:projectRef/envvars/:env": {
    kinds: SK_PAT, target: "project", success: 200, listShowsMarker: true,
    build: async (fx) => {
      await fx.variable(true);
      return { url: envvars(fx) };
    },
  },
  "POST /api/v1/projects/:projectRef/envvars/:env": {
    kinds: SK_PAT, target: "project", success: 200,
    build: async (fx) => ({ url: envvars(fx), payload: { name: fx.unique("NEW_VAR"), value: "v" } }),
  },
  "POST /api/v1/projects/:projectRef/envvars/:env/import": {
    kinds: SK_PAT, target: "project", success: 200,
    build: async (fx) => ({ url: envvars(fx, "/import"), payload: { variables: { [fx.unique("IMPORTED")]: "v" } } }),
  },
  "GET /api/v1/projects/:projectRef/envvars/:env/:name": {
    kinds: SK_PAT, target: "project", success: 200,
    build: async (fx) => ({ url: envvars(fx, `/${await fx.variable(true)}`) }),
  },
  "PUT /api/v1/projects/:projectRef/envvars/:env/:name": {
    kinds: SK_PAT, target: "project", success: 200,
    build: async (fx) => ({ url: envvars(fx, `/${await fx.variable()}`), payload: { value: "updated" } }),
  },
  "POST /api/v1/projects/:projectRef/envvars/:env/:name": {
    kinds: SK_PAT, target: "project", success: 200,
    build: async (fx) => ({ url: envvars(fx, `/${await fx.variable()}`), payload: { value: "updated" } }),
  },
  "DELETE /api/v1/projects/:projectRef/envvars/:env/:name": {
    kinds: SK_PAT, target: "project", success: 200,
    build: async (fx) => ({ url: envvars(fx, `/${await fx.variable()}`) }),
  },
};
