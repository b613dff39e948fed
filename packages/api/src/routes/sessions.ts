import type { FastifyInstance } from "fastify";
import { z } from "zod";
import {
  closeSession,
  endAndContinueSession,
  findSession,
  getRun,
  getSession,
  isFinalRunStatus,
  listSessionRows,
  PermissionError,
  parseSessionListFilter,
  startSession,
  updateSession,
} from "@svc/runtime/engine";
import {
  CloseSessionRequestBody,
  CreatedSessionResponse,
  CreateSessionRequestBody,
  EndAndContinueSessionRequestBody,
  EndAndContinueSessionResponse,
  ListSessionsFilterQuery,
  ListSessionsResponse,
  MAX_SESSION_CREATE_BYTES,
  RunListResponse,
  SessionItem,
  SessionRef,
  UpdateSessionRequestBody,
} from "@svc/runtime/contracts";
import type { Principal } from "../auth/principal.ts";
import { requireScope } from "../auth/scopes.ts";
import { requireSessionAccess, sessionScopes } from "../auth/session-access.ts";
import type { AppDeps } from "../deps.ts";
import { mintPublicToken } from "../auth/public-tokens.ts";
import { CursorPageQuery, keysetPage } from "../http/pagination.ts";
import { environmentOf } from "../http/principal-guards.ts";
import { defineRoute } from "../http/route.ts";
import { presentSession } from "../presenters/session.ts";
import { runListPage, RunListQuery } from "./runs.ts";

/** Sessions' public tokens live an hour (the management API's default). */
export const SESSION_TOKEN_SECONDS = 3600;
const SESSION_LIST_PAGE_SIZE = 20;
const SessionParams = z.object({ session: SessionRef });

/** A public token lists with `read:sessions` / `read:tasks`, or `read:tasks:<id>` for every task filtered on. */
function requireListScope(principal: Principal, taskIdentifiers: string[]): void {
  try {
    requireScope(principal, ["read:sessions", "read:tasks"]);
  } catch (error) {
    if (!(error instanceof PermissionError) || taskIdentifiers.length === 0) throw error;
    for (const task of taskIdentifiers) requireScope(principal, [`read:tasks:${task}`]);
  }
}

/** The values of a comma-joined filter. */
function commaParts(value: string | undefined): string[] {
  return (value ?? "").split(",").map((s) => s.trim()).filter((s) => s.length > 0);
}

/**
 * End-and-continue is the run's own hand-over (Trigger.dev's semantics): the calling run asks for
 * a successor, then returns. A public token is a browser's, never the run's: it may name a run
 * that has ended (a restart, as an append to `.in` would make), never a live one, which would
 * keep running beside its successor. A final status never changes, so the check cannot race.
 * An unknown run is left to the engine (404).
 */
async function requireEndedCallingRun(deps: AppDeps, environmentId: string, callingRunId: string): Promise<void> {
  const run = await getRun(deps.engine.db, callingRunId, environmentId);
  if (run && !isFinalRunStatus(run.status)) {
    throw new PermissionError(`Run ${callingRunId} is still ${run.status}: only the run itself (with the secret key) hands a session over from a live run`);
  }
}

export function registerSessionRoutes(app: FastifyInstance, deps: AppDeps) {
  const now = () => deps.engine.clock.now();

  defineRoute(app, deps, {
    method: "POST",
    url: "/api/v1/sessions",
    operation: "sessions.start",
    errors: [409],
    summary: "Start a session and its first run (an open session with the same externalId is returned, isCached)",
    tags: ["sessions"],
    auth: { allow: ["secretKey", "publicJwt"] },
    bodyLimit: MAX_SESSION_CREATE_BYTES,
    body: CreateSessionRequestBody,
    status: 201,
    alsoSucceeds: [{ status: 200, description: "An open session with this externalId already existed: that session (isCached: true)" }],
    response: CreatedSessionResponse,
    async handler({ principal, body, reply }) {
      const env = environmentOf(principal);
      // A public token may start the session its externalId names (or return it, cached): scoped to
      // that externalId, or to the id of the open session that already has it.
      const existing = principal.kind === "publicJwt" && body.externalId !== undefined ? await findSession(deps.engine.db, env.id, body.externalId) : null;
      requireScope(principal, [
        `write:tasks:${body.taskIdentifier}`,
        ...(body.externalId !== undefined ? sessionScopes("write", body.externalId, existing) : ["write:sessions"]),
      ]);
      const { session, runId, isCached, runStarted } = await startSession(deps.engine, env, body);
      if (runStarted) deps.metrics?.runsTriggered.inc();
      const scopeId = session.external_id ?? session.id;
      const publicAccessToken = await mintPublicToken(deps, env, [`read:sessions:${scopeId}`, `write:sessions:${scopeId}`], SESSION_TOKEN_SECONDS);
      reply.status(isCached ? 200 : 201);
      return { ...presentSession(session, now()), runId, publicAccessToken, isCached };
    },
  });

  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v1/sessions",
    operation: "sessions.list",
    summary: "List sessions of the environment, newest first",
    tags: ["sessions"],
    auth: { allow: ["secretKey", "publicJwt"] },
    query: CursorPageQuery.extend(ListSessionsFilterQuery.shape),
    response: ListSessionsResponse,
    async handler({ principal, query }) {
      const env = environmentOf(principal);
      requireListScope(principal, commaParts(query["filter[taskIdentifier]"]));
      const at = now();
      const filter = parseSessionListFilter(query, at);
      return keysetPage(
        query,
        SESSION_LIST_PAGE_SIZE,
        (keyset, direction, limit) => listSessionRows(deps.engine.db, env.id, filter, at, keyset, direction, limit),
        (row) => presentSession(row, at, { withTriggerConfig: false }),
      );
    },
  });

  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v1/sessions/:session",
    operation: "sessions.retrieve",
    summary: "Retrieve a session by its id or externalId",
    tags: ["sessions"],
    auth: { allow: ["secretKey", "publicJwt"] },
    params: SessionParams,
    response: SessionItem,
    async handler({ principal, params }) {
      const env = environmentOf(principal);
      const session = await findSession(deps.engine.db, env.id, params.session);
      requireSessionAccess(principal, "read", params.session, session);
      return presentSession(session ?? (await getSession(deps.engine.db, env.id, params.session)), now());
    },
  });

  defineRoute(app, deps, {
    method: "PATCH",
    url: "/api/v1/sessions/:session",
    operation: "sessions.update",
    errors: [409, 422],
    summary: "Change a session's tags and metadata (secret key only; externalId cannot change)",
    tags: ["sessions"],
    auth: { allow: ["secretKey", "publicJwt"] },
    params: SessionParams,
    body: UpdateSessionRequestBody,
    response: SessionItem,
    async handler({ principal, params, body }) {
      const env = environmentOf(principal);
      requireSessionAccess(principal, "admin", params.session, null);
      return presentSession(await updateSession(deps.engine, env, params.session, body), now());
    },
  });

  defineRoute(app, deps, {
    method: "POST",
    url: "/api/v1/sessions/:session/close",
    operation: "sessions.close",
    summary: "Close a session (secret key only; closing again changes nothing)",
    tags: ["sessions"],
    auth: { allow: ["secretKey", "publicJwt"] },
    params: SessionParams,
    body: CloseSessionRequestBody,
    response: SessionItem,
    async handler({ principal, params, body }) {
      const env = environmentOf(principal);
      requireSessionAccess(principal, "admin", params.session, null);
      return presentSession(await closeSession(deps.engine, env, params.session, body), now());
    },
  });

  defineRoute(app, deps, {
    method: "POST",
    url: "/api/v1/sessions/:session/end-and-continue",
    operation: "sessions.endAndContinue",
    summary: "Hand the session over from the calling run to a new run of its task (a public token only from a run that has ended)",
    tags: ["sessions"],
    auth: { allow: ["secretKey", "publicJwt"] },
    params: SessionParams,
    body: EndAndContinueSessionRequestBody,
    response: EndAndContinueSessionResponse,
    async handler({ principal, params, body }) {
      const env = environmentOf(principal);
      const session = await findSession(deps.engine.db, env.id, params.session);
      requireSessionAccess(principal, "write", params.session, session);
      if (principal.kind === "publicJwt") await requireEndedCallingRun(deps, env.id, body.callingRunId);
      const continued = await endAndContinueSession(deps.engine, env, params.session, body);
      // Only a hand-over starts a run: while another run of the session is alive, it is returned instead.
      if (continued.swapped) deps.metrics?.runsTriggered.inc();
      return continued;
    },
  });

  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v1/sessions/:session/runs",
    operation: "sessions.listRuns",
    summary: "List the runs a session started, newest first (as runs.list, with its filters)",
    tags: ["sessions"],
    auth: { allow: ["secretKey", "publicJwt"] },
    params: SessionParams,
    query: RunListQuery,
    response: RunListResponse,
    async handler({ principal, params, query }) {
      const env = environmentOf(principal);
      const session = await findSession(deps.engine.db, env.id, params.session);
      requireSessionAccess(principal, "read", params.session, session);
      const found = session ?? (await getSession(deps.engine.db, env.id, params.session));
      return runListPage(deps, [env.id], { ...query, "filter[session]": [found.id] });
    },
  });
}
