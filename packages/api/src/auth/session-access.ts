import { PermissionError, type SessionRow } from "@svc/runtime/engine";
import type { Principal } from "./principal.ts";
import { hasScope, requireScope } from "./scopes.ts";

/** What a credential may do to a session: read it, write to it, or manage it (PATCH, close). */
export type SessionAction = "read" | "write" | "admin";

/**
 * The names a session goes by in scopes: the path's form, its id and its externalId. A token
 * scoped to either form opens the session under both.
 */
export function sessionScopeIds(ref: string, session: Pick<SessionRow, "id" | "external_id"> | null): string[] {
  const ids = new Set([ref]);
  if (session) {
    ids.add(session.id);
    if (session.external_id !== null) ids.add(session.external_id);
  }
  return [...ids];
}

/**
 * Checks a public token's session scopes (secret keys pass). `read:sessions:<id>` reads,
 * `write:sessions:<id>` writes; type-level `read:sessions` / `write:sessions` cover every session
 * of the environment. Managing (PATCH, close) needs a secret key: a public token is refused (403)
 * unless it carries the bare `admin` scope.
 */
export function requireSessionAccess(principal: Principal, action: SessionAction, ref: string, session: Pick<SessionRow, "id" | "external_id"> | null): void {
  requireScope(principal, sessionScopes(action, ref, session));
}

/** Whether the principal may do `action` to the session (see requireSessionAccess), without throwing. */
export function hasSessionAccess(principal: Principal, action: SessionAction, ref: string, session: Pick<SessionRow, "id" | "external_id"> | null): boolean {
  return hasScope(principal, sessionScopes(action, ref, session));
}

/** The scopes any one of which grants `action` on the session: on either of its names, or on every session. */
export function sessionScopes(action: SessionAction, ref: string, session: Pick<SessionRow, "id" | "external_id"> | null): string[] {
  return [...sessionScopeIds(ref, session).map((id) => `${action}:sessions:${id}`), `${action}:sessions`];
}

/** Appending to `.out` is the run's side of the conversation: secret keys only. */
export function requireSecretKeyForOut(principal: Principal): void {
  if (principal.kind !== "secretKey") throw new PermissionError("Appending to the out channel requires secret key authentication");
}
