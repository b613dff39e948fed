import type { SessionRow } from "@svc/runtime/engine";

/**
 * Each session's externalId (or none), by the session's id, as looked up: a public token scoped
 * to a session's externalId may name it by its id in a path, and telling whether it may used to
 * cost a lookup on every append. Both names are fixed for the session's life and ids are never
 * reused, so what is remembered never goes stale; at most `maxEntries`, the oldest dropped first.
 */
export class SessionNames {
  readonly #externalIds = new Map<string, string | null>();
  readonly #maxEntries: number;

  constructor(maxEntries = 10_000) {
    this.#maxEntries = maxEntries;
  }

  /** The session's externalId (null: it has none); undefined when not known here. */
  externalIdOf(environmentId: string, sessionId: string): string | null | undefined {
    return this.#externalIds.get(`${environmentId}\n${sessionId}`);
  }

  remember(environmentId: string, session: Pick<SessionRow, "id" | "external_id">): void {
    const key = `${environmentId}\n${session.id}`;
    if (this.#externalIds.has(key)) return;
    if (this.#externalIds.size >= this.#maxEntries) this.#externalIds.delete(this.#externalIds.keys().next().value!);
    this.#externalIds.set(key, session.external_id);
  }
}
