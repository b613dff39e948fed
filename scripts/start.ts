// `pnpm start`: svc on this machine with nothing to set up. Uses DATABASE_URL when set, otherwise
// an embedded Postgres whose data stays in .svc/pg between runs; creates the default project on
// first start and prints its keys; then runs the API and a worker with the example tasks.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createPool, migrate, withTransaction } from "../packages/runtime/src/db/index.ts";
import { ensureDefaultProject, SecretBox, systemClock } from "../packages/runtime/src/engine/index.ts";
import { startEmbeddedPostgres } from "./embedded-postgres.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const STATE = `${ROOT}.svc`;
mkdirSync(STATE, { recursive: true });

function persisted(file: string, make: () => string): string {
  const path = `${STATE}/${file}`;
  if (existsSync(path)) return readFileSync(path, "utf8").trim();
  const value = make();
  writeFileSync(path, value + "\n", { mode: 0o600 });
  return value;
}

const port = Number(process.env.PORT ?? 3030);
const encryptionKey = process.env.SVC_ENCRYPTION_KEY ?? persisted("encryption-key", () => randomBytes(32).toString("base64url"));
let databaseUrl = process.env.DATABASE_URL;
let stopDatabase: (() => Promise<void>) | undefined;
if (!databaseUrl) {
  const pgPort = Number(persisted("pg-port", () => String(54_000 + Math.floor(Math.random() * 900))));
  const embedded = await startEmbeddedPostgres(`${STATE}/pg`, { port: pgPort, persistent: true });
  databaseUrl = embedded.url;
  stopDatabase = embedded.stop;
  console.log(`embedded Postgres on 127.0.0.1:${pgPort} (data in .svc/pg)`);
}
// The operator CLI (`pnpm svc …`) finds the database and key here when DATABASE_URL is not set.
writeFileSync(`${STATE}/runtime.json`, JSON.stringify({ databaseUrl, encryptionKey }, null, 2) + "\n", { mode: 0o600 });

const pool = createPool(databaseUrl, { max: 2 });
await migrate(pool);
const project = await withTransaction(pool, (tx) => ensureDefaultProject(tx, new SecretBox(encryptionKey), systemClock.now()));
await pool.end();

const apiUrl = process.env.SERVICE_API_URL ?? `http://localhost:${port}`;
console.log(`
svc is starting
  API           ${apiUrl}   (OpenAPI: ${apiUrl}/api/openapi.json)
  project ref   ${project.projectRef}
  dev key       ${project.environments.dev.secretKey}

try it:
  curl -s -X POST ${apiUrl}/api/v1/tasks/hello-world/trigger \\
    -H "Authorization: Bearer ${project.environments.dev.secretKey}" \\
    -H "Content-Type: application/json" -d '{"payload":{"name":"Ada"}}'
  curl -s ${apiUrl}/api/v3/runs/<run id> -H "Authorization: Bearer ${project.environments.dev.secretKey}"

all keys: pnpm svc keys show --project ${project.projectRef}
`);

const common = { ...process.env, DATABASE_URL: databaseUrl, SVC_ENCRYPTION_KEY: encryptionKey, SERVICE_API_URL: apiUrl };
const children: ChildProcess[] = [];
function run(name: string, entry: string, env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, ["--import", "tsx", entry], { cwd: ROOT, env, stdio: "inherit" });
  child.on("exit", (code, signal) => {
    if (!stopping) {
      console.error(`${name} exited (${code ?? signal}); stopping svc`);
      void stop(1);
    }
  });
  children.push(child);
}
run("api", "packages/api/src/main.ts", { ...common, PORT: String(port) });
run("worker", "packages/worker/src/main.ts", {
  ...common,
  SERVICE_SECRET_KEY: process.env.SERVICE_SECRET_KEY ?? project.environments.dev.secretKey,
  SVC_CONFIG: process.env.SVC_CONFIG ?? "examples/hello/svc.config.ts",
});

let stopping = false;
async function stop(code = 0) {
  if (stopping) return;
  stopping = true;
  await Promise.all(
    children.map((c) => new Promise<void>((resolve) => (c.exitCode !== null ? resolve() : (c.once("exit", () => resolve()), c.kill("SIGTERM"))))),
  );
  await stopDatabase?.().catch(() => {});
  process.exit(code);
}
process.on("SIGINT", () => void stop());
process.on("SIGTERM", () => void stop());
