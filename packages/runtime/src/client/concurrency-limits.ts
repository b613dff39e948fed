// Named concurrency limits: /api/v1/concurrency-limits[/{name}[/override|/pause|/reset]] (secret
// key only), as Trigger.dev's SDK's `concurrencyLimits`. A run holds a limit through its trigger's
// `concurrency` option; docs/queues-and-concurrency.md says what each bound counts.
import { segment, type HttpTransport } from "./http.ts";
import { OffsetPage, pagePromise, type OffsetPagination, type PagePromise } from "./pagination.ts";

/** One bound of a limit: the one in force (the override, else the declared one; null: none). */
export interface ConcurrencyLimitBound {
  current: number | null;
  /** svc declares no named limits in task code yet: null. */
  base: number | null;
  override: number | null;
  overriddenAt: Date | null;
}

export interface ConcurrencyLimitObject {
  id: string;
  name: string;
  /** Caps each concurrencyKey (runs without one share one pool). */
  perKey: ConcurrencyLimitBound;
  /** Caps every executing run holding the limit. */
  total: ConcurrencyLimitBound;
  running: number;
  queued: number;
  paused: boolean;
}

/** One concurrencyKey's view of a limit. */
export interface ConcurrencyLimitKeyObject {
  name: string;
  concurrencyKey: string;
  perKey: { current: number | null; base: number | null; override: number | null; expiresAt: Date | null };
  running: number;
  paused: boolean;
}

/** The limit's own bounds (at least one; 0 starts nothing), until a reset. */
export interface OverrideBounds {
  perKey?: number;
  total?: number;
}

/** One key's perKey, until `ttl` (a duration such as "7d", or seconds; default 7 days, at most 30) or a reset. */
export interface OverrideKey {
  concurrencyKey: string;
  perKey: number;
  ttl?: string | number;
}

const date = (value: unknown): Date | null => (typeof value === "string" ? new Date(value) : null);
const reviveLimit = (l: ConcurrencyLimitObject): ConcurrencyLimitObject => ({
  ...l,
  perKey: { ...l.perKey, overriddenAt: date(l.perKey.overriddenAt) },
  total: { ...l.total, overriddenAt: date(l.total.overriddenAt) },
});
const reviveKey = (k: ConcurrencyLimitKeyObject): ConcurrencyLimitKeyObject => ({ ...k, perKey: { ...k.perKey, expiresAt: date(k.perKey.expiresAt) } });

export class ConcurrencyLimitsResource {
  constructor(private readonly connect: () => HttpTransport) {}

  /**
   * The environment's named limits by name; await for one page or `for await` for all.
   *
   * @example
   * for await (const limit of concurrencyLimits.list()) console.log(limit.name, limit.running, limit.total.current);
   */
  list(options: { page?: number; perPage?: number } = {}): PagePromise<OffsetPage<ConcurrencyLimitObject>, ConcurrencyLimitObject> {
    const http = this.connect();
    const fetchPage = async (page: number | undefined): Promise<OffsetPage<ConcurrencyLimitObject>> => {
      const { data } = await http.request<{ data: ConcurrencyLimitObject[]; pagination: OffsetPagination }>({
        method: "GET",
        path: "/api/v1/concurrency-limits",
        query: { page, perPage: options.perPage },
      });
      const pagination = {
        currentPage: Number(data.pagination?.currentPage ?? page ?? 1),
        totalPages: Number(data.pagination?.totalPages ?? 1),
        count: Number(data.pagination?.count ?? data.data.length),
      };
      return new OffsetPage((data.data ?? []).map(reviveLimit), pagination, fetchPage);
    };
    return pagePromise(fetchPage(options.page));
  }

  /**
   * A limit, or with `concurrencyKey` that key's pool of it.
   *
   * @example
   * const openai = await concurrencyLimits.retrieve("openai");
   * const acme = await concurrencyLimits.retrieve("openai", { concurrencyKey: "acme" });
   */
  retrieve(name: string, options: { concurrencyKey: string }): Promise<ConcurrencyLimitKeyObject>;
  retrieve(name: string): Promise<ConcurrencyLimitObject>;
  async retrieve(name: string, options?: { concurrencyKey: string }): Promise<ConcurrencyLimitObject | ConcurrencyLimitKeyObject> {
    const { data } = await this.connect().request<ConcurrencyLimitObject | ConcurrencyLimitKeyObject>({
      method: "GET",
      path: `/api/v1/concurrency-limits/${segment(name)}`,
      query: { concurrencyKey: options?.concurrencyKey },
    });
    return options ? reviveKey(data as ConcurrencyLimitKeyObject) : reviveLimit(data as ConcurrencyLimitObject);
  }

  /**
   * Overrides the limit's bounds, or one key's perKey (creates the limit when nobody set it yet).
   *
   * @example
   * await concurrencyLimits.override("openai", { total: 20, perKey: 2 });
   * await concurrencyLimits.override("openai", { concurrencyKey: "acme", perKey: 5, ttl: "1d" });
   */
  override(name: string, override: OverrideKey): Promise<ConcurrencyLimitKeyObject>;
  override(name: string, override: OverrideBounds): Promise<ConcurrencyLimitObject>;
  async override(name: string, override: OverrideBounds | OverrideKey): Promise<ConcurrencyLimitObject | ConcurrencyLimitKeyObject> {
    const data = await this.#post(name, "override", override);
    return "concurrencyKey" in override ? reviveKey(data as ConcurrencyLimitKeyObject) : reviveLimit(data as ConcurrencyLimitObject);
  }

  /**
   * Drops the limit's overrides, or with `concurrencyKey` that key's.
   *
   * @example
   * await concurrencyLimits.reset("openai");
   */
  reset(name: string, options: { concurrencyKey: string }): Promise<ConcurrencyLimitKeyObject>;
  reset(name: string): Promise<ConcurrencyLimitObject>;
  async reset(name: string, options?: { concurrencyKey: string }): Promise<ConcurrencyLimitObject | ConcurrencyLimitKeyObject> {
    const data = await this.#post(name, "reset", options ?? {});
    return options ? reviveKey(data as ConcurrencyLimitKeyObject) : reviveLimit(data as ConcurrencyLimitObject);
  }

  /** No run holding the limit starts until it is resumed; runs under way go on. */
  async pause(name: string): Promise<ConcurrencyLimitObject> {
    return reviveLimit((await this.#post(name, "pause", { action: "pause" })) as ConcurrencyLimitObject);
  }

  async resume(name: string): Promise<ConcurrencyLimitObject> {
    return reviveLimit((await this.#post(name, "pause", { action: "resume" })) as ConcurrencyLimitObject);
  }

  async #post(name: string, action: string, body: object): Promise<unknown> {
    const { data } = await this.connect().request<unknown>({ method: "POST", path: `/api/v1/concurrency-limits/${segment(name)}/${action}`, body });
    return data;
  }
}
