// List results: one page of items plus the way to the next, and async iteration over all of them.
// The same shape as @trigger.dev/sdk's CursorPage / OffsetLimitPage.

/** What both kinds of page share: the items, and walking this page and the ones after it. */
abstract class Page<T, P extends Page<T, P>> implements AsyncIterable<T> {
  constructor(readonly data: T[]) {}

  abstract hasNextPage(): boolean;
  abstract getNextPage(): Promise<P>;

  getPaginatedItems(): T[] {
    return this.data;
  }

  /** This page, then each following page. */
  async *iterPages(): AsyncGenerator<P> {
    let page = this as unknown as P;
    yield page;
    while (page.hasNextPage()) {
      page = await page.getNextPage();
      yield page;
    }
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for await (const page of this.iterPages()) yield* page.data;
  }
}

export interface CursorPagination {
  next?: string;
  previous?: string;
}

/**
 * One page of a cursor-paginated list (runs, waitpoint tokens). `for await` over it yields every
 * item of this page and the pages after it.
 *
 * @example
 * const page = await runs.list({ status: ["COMPLETED"], limit: 50 });
 * console.log(page.data.length, page.hasNextPage());
 * for await (const run of page) console.log(run.id); // walks all pages
 */
export class CursorPage<T> extends Page<T, CursorPage<T>> {
  constructor(
    data: T[],
    readonly pagination: CursorPagination,
    private readonly fetchPage: (cursor: { after?: string; before?: string }) => Promise<CursorPage<T>>,
  ) {
    super(data);
  }

  hasNextPage(): boolean {
    return Boolean(this.pagination.next);
  }

  hasPreviousPage(): boolean {
    return Boolean(this.pagination.previous);
  }

  getNextPage(): Promise<CursorPage<T>> {
    if (!this.pagination.next) throw new Error("No next page available");
    return this.fetchPage({ after: this.pagination.next });
  }

  getPreviousPage(): Promise<CursorPage<T>> {
    if (!this.pagination.previous) throw new Error("No previous page available");
    return this.fetchPage({ before: this.pagination.previous });
  }

}

export interface OffsetPagination {
  currentPage: number;
  totalPages: number;
  count: number;
}

/**
 * One page of an offset-paginated list (schedules). `for await` walks the following pages.
 *
 * @example
 * for await (const schedule of await schedules.list({ perPage: 50 })) console.log(schedule.id);
 */
export class OffsetPage<T> extends Page<T, OffsetPage<T>> {
  constructor(
    data: T[],
    readonly pagination: OffsetPagination,
    private readonly fetchPage: (page: number) => Promise<OffsetPage<T>>,
  ) {
    super(data);
  }

  hasNextPage(): boolean {
    return this.pagination.currentPage < this.pagination.totalPages;
  }

  hasPreviousPage(): boolean {
    return this.pagination.currentPage > 1;
  }

  getNextPage(): Promise<OffsetPage<T>> {
    if (!this.hasNextPage()) throw new Error("No next page available");
    return this.fetchPage(this.pagination.currentPage + 1);
  }

  getPreviousPage(): Promise<OffsetPage<T>> {
    if (!this.hasPreviousPage()) throw new Error("No previous page available");
    return this.fetchPage(this.pagination.currentPage - 1);
  }

}

/** Turns the ISO strings of the named fields into Dates (shallow), leaving absent fields absent. */
export function reviveDates<T>(value: T, fields: readonly string[]): T {
  if (typeof value !== "object" || value === null) return value;
  const copy: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  for (const field of fields) {
    const raw = copy[field];
    if (typeof raw === "string" || typeof raw === "number") {
      const date = new Date(raw);
      if (!Number.isNaN(date.getTime())) copy[field] = date;
    }
  }
  return copy as T;
}

/**
 * A page still on its way: `await` it for the first page (`.data`, `.getNextPage()`), or
 * `for await` it directly to walk every item across pages.
 */
export type PagePromise<P extends AsyncIterable<T>, T> = Promise<P> & AsyncIterable<T>;

export function pagePromise<P extends AsyncIterable<T>, T>(promise: Promise<P>): PagePromise<P, T> {
  return Object.assign(promise, {
    async *[Symbol.asyncIterator]() {
      yield* await promise;
    },
  }) as PagePromise<P, T>;
}
