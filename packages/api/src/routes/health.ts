import type { FastifyInstance } from "fastify";
import { migrationsApplied } from "@svc/runtime/db";
import type { AppDeps } from "../deps.ts";

export function registerHealthRoutes(app: FastifyInstance, deps: AppDeps) {
  app.get("/healthz", async () => ({ ok: true }));
  app.get("/readyz", async (_request, reply) => {
    try {
      if (await migrationsApplied(deps.engine.db)) return { ok: true };
      return reply.status(503).send({ ok: false, error: "migrations not applied" });
    } catch (error) {
      return reply.status(503).send({ ok: false, error: `database unreachable: ${(error as Error).message}` });
    }
  });
}
