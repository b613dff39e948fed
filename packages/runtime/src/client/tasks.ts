// Triggering runs over HTTP: POST /api/v1/tasks/{taskId}/trigger and the v3 two-phase batches.
import { randomId } from "../ids.ts";
import { segment, type HttpTransport } from "./http.ts";
import { offloadLargePayload, serializePayload } from "./packets.ts";
import { publicTokenFromResponse } from "./public-tokens.ts";
import { batchTriggerInTransaction, triggerInTransaction } from "./trigger-in-transaction.ts";
import type { TransactionClient, TriggerOptions } from "./trigger-options.ts";

export type { TransactionClient, TriggerOptions } from "./trigger-options.ts";

/** What a trigger returns. */
export interface RunHandle {
  id: string;
  /** True when an idempotency key matched an existing run. */
  isCached: boolean;
  /** A public token that can read this run (scope `read:runs:<id>`). */
  publicAccessToken?: string;
}

export interface BatchItem<TPayload = unknown> {
  payload: TPayload;
  options?: TriggerOptions;
}

/** One item of a batch over several tasks. */
export interface BatchTaskItem<TPayload = unknown> extends BatchItem<TPayload> {
  task: string;
}

export interface BatchTriggerOptions {
  /** The same key returns the existing batch (`isCached: true`). */
  idempotencyKey?: string;
  idempotencyKeyTTL?: string;
  /** Trigger the whole batch inside this database transaction (see TriggerOptions.tx). */
  tx?: TransactionClient;
}

export interface BatchHandle {
  batchId: string;
  runCount: number;
  isCached: boolean;
  idempotencyKey?: string;
  /** A public token that can read this batch (scope `read:batch:<id>`). */
  publicAccessToken?: string;
  /** The runs' ids in item order (a batch triggered with `{ tx }`, which has them at once). */
  runIds?: string[];
}

/** Resending a batch's items stops after this many unsealed answers. */
export const BATCH_SEAL_ATTEMPTS = 5;
export const MAX_BATCH_ITEMS = 1000;

/** The wire form of trigger options: queue as `{ name }`, the raw idempotency key plus `idempotencyKeyOptions`. */
export function wireOptions(options: TriggerOptions | undefined, payloadType: string): Record<string, unknown> {
  const { queue, idempotencyKey, ...rest } = options ?? {};
  const wire: Record<string, unknown> = { ...rest, payloadType };
  if (queue !== undefined) wire.queue = typeof queue === "string" ? { name: queue } : queue;
  if (idempotencyKey !== undefined) {
    wire.idempotencyKey = idempotencyKey;
    wire.idempotencyKeyOptions = { key: idempotencyKey };
  }
  if (options?.delay instanceof Date) wire.delay = options.delay.toISOString();
  if (typeof options?.concurrency === "string") wire.concurrency = [options.concurrency];
  for (const key of Object.keys(wire)) if (wire[key] === undefined) delete wire[key];
  return wire;
}

async function wireItem(http: HttpTransport, item: BatchTaskItem, index: number) {
  const serialized = await offloadLargePayload(http, serializePayload(item.payload), `batch/${randomId(16)}/${index}/payload.json`);
  return { index, task: item.task, payload: serialized.payload, options: wireOptions(item.options, serialized.payloadType) };
}

export class TasksResource {
  constructor(private readonly connect: () => HttpTransport) {}

  /**
   * Triggers one run of a task by id and returns at once (the run is QUEUED, or DELAYED).
   *
   * @example
   * const handle = await tasks.trigger("hello-world", { name: "Ada" }, { tags: ["user:42"] });
   * console.log(handle.id); // "run_…"
   */
  async trigger<TPayload = unknown>(taskId: string, payload: TPayload, options?: TriggerOptions): Promise<RunHandle> {
    const http = this.connect();
    if (options?.tx) {
      const { tx, ...rest } = options;
      return triggerInTransaction(http, tx, taskId, payload, rest);
    }
    http.requireAccessToken("tasks.trigger");
    const serialized = await offloadLargePayload(http, serializePayload(payload), `trigger/${randomId(16)}/payload.json`);
    const body: Record<string, unknown> = { options: wireOptions(options, serialized.payloadType) };
    if (serialized.payload !== undefined) body.payload = serialized.payload;
    const { data, headers } = await http.request<{ id: string; isCached?: boolean }>({
      method: "POST",
      path: `/api/v1/tasks/${segment(taskId)}/trigger`,
      body,
    });
    const publicAccessToken = await publicTokenFromResponse(headers, http.config.accessToken, [`read:runs:${data.id}`], "1h");
    return { id: data.id, isCached: data.isCached ?? false, ...(publicAccessToken ? { publicAccessToken } : {}) };
  }

  /**
   * Triggers many runs of one task as a batch (up to 1,000 items).
   *
   * @example
   * const batch = await tasks.batchTrigger("resize-image", [{ payload: { url: "a.png" } }, { payload: { url: "b.png" } }]);
   * console.log(batch.batchId, batch.runCount);
   */
  async batchTrigger<TPayload = unknown>(taskId: string, items: BatchItem<TPayload>[], options?: BatchTriggerOptions): Promise<BatchHandle> {
    return this.batchTriggerItems(items.map((item) => ({ ...item, task: taskId })), options);
  }

  /**
   * Triggers runs of several tasks as one batch: creates the batch, then streams the items as
   * NDJSON, resending them until the server reports the batch sealed (items are deduplicated by index).
   *
   * @example
   * await tasks.batchTriggerItems([{ task: "a", payload: 1 }, { task: "b", payload: 2 }]);
   */
  async batchTriggerItems(items: BatchTaskItem[], options: BatchTriggerOptions = {}): Promise<BatchHandle> {
    if (items.length === 0) throw new TypeError("batchTrigger: at least one item is required");
    if (items.length > MAX_BATCH_ITEMS) throw new TypeError(`batchTrigger: at most ${MAX_BATCH_ITEMS} items per batch`);
    const http = this.connect();
    if (options.tx) {
      if (options.idempotencyKeyTTL !== undefined) throw new TypeError("batchTrigger: { tx } takes no idempotencyKeyTTL (a batch's key has none in SQL)");
      const batch = await batchTriggerInTransaction(http, options.tx, items, options);
      return {
        batchId: batch.batchId,
        runCount: items.length,
        isCached: batch.isCached,
        runIds: batch.runIds,
        ...(options.idempotencyKey ? { idempotencyKey: options.idempotencyKey } : {}),
      };
    }
    http.requireAccessToken("tasks.batchTrigger");
    const create: Record<string, unknown> = { runCount: items.length, taskIdentifiers: [...new Set(items.map((i) => i.task))] };
    if (options.idempotencyKey) {
      create.idempotencyKey = options.idempotencyKey;
      create.idempotencyKeyOptions = { key: options.idempotencyKey };
    }
    if (options.idempotencyKeyTTL) create.idempotencyKeyTTL = options.idempotencyKeyTTL;
    const created = await http.request<{ id: string; runCount: number; isCached: boolean; idempotencyKey?: string }>({
      method: "POST",
      path: "/api/v3/batches",
      body: create,
    });
    const batch = created.data;
    const publicAccessToken = await publicTokenFromResponse(created.headers, http.config.accessToken, [`read:batch:${batch.id}`], "1h");
    const handle: BatchHandle = {
      batchId: batch.id,
      runCount: batch.runCount ?? items.length,
      isCached: batch.isCached ?? false,
      ...(batch.idempotencyKey ? { idempotencyKey: batch.idempotencyKey } : {}),
      ...(publicAccessToken ? { publicAccessToken } : {}),
    };
    if (handle.isCached) return handle;
    const lines = await Promise.all(items.map((item, index) => wireItem(http, item, index)));
    const ndjson = lines.map((line) => JSON.stringify(line)).join("\n") + "\n";
    for (let attempt = 1; attempt <= BATCH_SEAL_ATTEMPTS; attempt++) {
      const { data } = await http.request<{ sealed: boolean; itemsAccepted?: number }>({
        method: "POST",
        path: `/api/v3/batches/${segment(batch.id)}/items`,
        rawBody: { content: ndjson, contentType: "application/x-ndjson" },
      });
      if (data.sealed) return handle;
    }
    throw new Error(`batchTrigger: batch ${batch.id} was not sealed after ${BATCH_SEAL_ATTEMPTS} attempts to send its ${items.length} items`);
  }
}
