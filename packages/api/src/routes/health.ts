import type { FastifyInstance } from "fastify";
import { readinessCheck } from "@svc/runtime/db";
import type { AppDeps } from "../deps.ts";

export function registerHealthRoutes(app: FastifyInstance, deps: AppDeps) {
  app.get("/healthz", async () => ({ ok: true }));
  const ready = readinessCheck(deps.engine.db);
  app.get("/readyz", async (_request, reply) => {
    try {
      if (await ready()) return { ok: true };
      return reply.status(503).send({ ok: false, error: "migrations not applied" });
    } catch (error) {
      return reply.status(503).send({ ok: false, error: `database unreachable: ${(error as Error).message}` });
    }
  });
}
