// Queues: /api/v1/queues[/{value}[/pause|/concurrency/override|/concurrency/reset]] (secret key only).
// A queue is named by its id (`queue_…`) or as `{ type: "task", name: <task id> }` (a task's own
// queue) or `{ type: "custom", name: <queue name> }`, as in Trigger.dev's SDK.
import { segment, type HttpTransport } from "./http.ts";
import { OffsetPage, pagePromise, reviveDates, type OffsetPagination, type PagePromise } from "./pagination.ts";

export interface QueueObject {
  id: string;
  /** A task's own queue is named by the task id. */
  name: string;
  type: "task" | "custom";
  version: "V1";
  /** Executing runs. */
  running: number;
  /** Queued runs whose start is due. */
  queued: number;
  /** No new run starts while paused. */
  paused: boolean;
  /** The limit in force (the override, else the tasks' declared one); null: none. */
  concurrencyLimit: number | null;
  concurrency: {
    current: number | null;
    /** The strictest concurrencyLimit the queue's tasks declare. */
    base: number | null;
    override: number | null;
    overriddenAt: Date | null;
    overriddenBy: string | null;
  };
}

/** A queue id (`queue_…`), or a task's own queue or a named one. */
export type QueueReference = string | { type: "task" | "custom"; name: string };

export interface ListQueuesOptions {
  /** 1-based. @default 1 */
  page?: number;
  /** @default 20 (max 100) */
  perPage?: number;
}

const reviveQueue = (q: QueueObject): QueueObject => ({ ...q, concurrency: reviveDates(q.concurrency, ["overriddenAt"]) });

/** The path segment and the `type` the API reads it as (a `/` in a name sent as `%2F`, as the SDK does). */
function located(queue: QueueReference): { value: string; type: "id" | "task" | "custom" } {
  if (typeof queue === "string") return { value: segment(queue), type: "id" };
  return { value: segment(queue.name.replace(/\//g, "%2F")), type: queue.type };
}

export class QueuesResource {
  constructor(private readonly connect: () => HttpTransport) {}

  /**
   * Lists the environment's queues by name; await for one page or `for await` for all.
   *
   * @example
   * for await (const queue of queues.list()) console.log(queue.name, queue.running, queue.queued, queue.paused);
   */
  list(options: ListQueuesOptions = {}): PagePromise<OffsetPage<QueueObject>, QueueObject> {
    const http = this.connect();
    const fetchPage = async (page: number | undefined): Promise<OffsetPage<QueueObject>> => {
      const { data } = await http.request<{ data: QueueObject[]; pagination: OffsetPagination }>({
        method: "GET",
        path: "/api/v1/queues",
        query: { page, perPage: options.perPage },
      });
      const pagination = {
        currentPage: Number(data.pagination?.currentPage ?? page ?? 1),
        totalPages: Number(data.pagination?.totalPages ?? 1),
        count: Number(data.pagination?.count ?? data.data.length),
      };
      return new OffsetPage((data.data ?? []).map(reviveQueue), pagination, fetchPage);
    };
    return pagePromise(fetchPage(options.page));
  }

  /**
   * @example
   * const emails = await queues.retrieve({ type: "custom", name: "emails" });
   */
  async retrieve(queue: QueueReference): Promise<QueueObject> {
    const { value, type } = located(queue);
    const { data } = await this.connect().request<QueueObject>({ method: "GET", path: `/api/v1/queues/${value}`, query: { type } });
    return reviveQueue(data);
  }

  /**
   * No run of the queue starts until it is resumed; runs under way go on.
   *
   * @example
   * await queues.pause({ type: "task", name: "send-email" });
   */
  async pause(queue: QueueReference): Promise<QueueObject> {
    return this.#post(queue, "pause", { action: "pause" });
  }

  /**
   * @example
   * await queues.resume({ type: "task", name: "send-email" });
   */
  async resume(queue: QueueReference): Promise<QueueObject> {
    return this.#post(queue, "pause", { action: "resume" });
  }

  /**
   * Replaces the queue's concurrencyLimit until a reset (0 starts nothing).
   *
   * @example
   * await queues.overrideConcurrencyLimit({ type: "custom", name: "emails" }, 2);
   */
  async overrideConcurrencyLimit(queue: QueueReference, concurrencyLimit: number): Promise<QueueObject> {
    return this.#post(queue, "concurrency/override", { concurrencyLimit });
  }

  /**
   * Drops the override: the limit the queue's tasks declare applies again.
   *
   * @example
   * await queues.resetConcurrencyLimit({ type: "custom", name: "emails" });
   */
  async resetConcurrencyLimit(queue: QueueReference): Promise<QueueObject> {
    return this.#post(queue, "concurrency/reset", {});
  }

  async #post(queue: QueueReference, action: string, body: object): Promise<QueueObject> {
    const { value, type } = located(queue);
    const { data } = await this.connect().request<QueueObject>({ method: "POST", path: `/api/v1/queues/${value}/${action}`, body: { type, ...body } });
    return reviveQueue(data);
  }
}
