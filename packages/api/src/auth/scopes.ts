import { PermissionError } from "@svc/runtime/engine";
import type { Principal } from "./principal.ts";

export const SCOPE_ACTIONS = ["read", "write", "trigger", "batchTrigger", "admin"] as const;
export const SCOPE_TYPES = ["runs", "tasks", "batch", "tags", "waitpoints", "sessions", "all"] as const;

export interface Scope {
  action: string;
  type?: string;
  id?: string;
}

/** `action:type[:id]`; only the first two colons split, so ids may contain colons. */
export function parseScope(scope: string): Scope {
  const first = scope.indexOf(":");
  if (first < 0) return { action: scope };
  const second = scope.indexOf(":", first + 1);
  if (second < 0) return { action: scope.slice(0, first), type: scope.slice(first + 1) };
  return { action: scope.slice(0, first), type: scope.slice(first + 1, second), id: scope.slice(second + 1) };
}

/** `write` also satisfies `trigger` and `batchTrigger` (Trigger.dev's aliases). */
function actionSatisfies(granted: string, needed: string): boolean {
  return granted === needed || (granted === "write" && (needed === "trigger" || needed === "batchTrigger"));
}

/** Does one granted scope cover one needed scope? Bare `admin` covers everything; `<action>:all` covers every type. */
export function scopeCovers(granted: string, needed: string): boolean {
  const g = parseScope(granted);
  const n = parseScope(needed);
  if (g.action === "admin" && g.type === undefined) return true;
  if (!actionSatisfies(g.action, n.action)) return false;
  if (g.type === "all") return true;
  if (g.type !== n.type) return false;
  return g.id === undefined || g.id === n.id;
}

/**
 * For public JWTs: whether any granted scope covers any of `anyOf`. Secret keys and PATs are not
 * scope-limited (routes restrict them by credential kind).
 */
export function hasScope(principal: Principal, anyOf: string[]): boolean {
  if (principal.kind !== "publicJwt") return true;
  return anyOf.some((needed) => principal.scopes.some((granted) => scopeCovers(granted, needed)));
}

/** Passes when the principal has one of `anyOf` (see hasScope); otherwise 403. */
export function requireScope(principal: Principal, anyOf: string[]): void {
  if (!hasScope(principal, anyOf)) throw new PermissionError("Unauthorized");
}
