import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * What `svc dev` keeps between runs in a project's `.svc/` folder: the encryption key, the
 * embedded Postgres's port and data, and runtime.json (where the operator commands find the
 * database and key when DATABASE_URL is not set, and `svc runs`/`svc tokens` the API and the dev
 * key when SERVICE_API_URL and SERVICE_SECRET_KEY are not). Readable by its owner only.
 */
export class DevState {
  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  /** The value stored in `file`, made by `make` and stored the first time. */
  persisted(file: string, make: () => string): string {
    const path = join(this.dir, file);
    if (existsSync(path)) return readFileSync(path, "utf8").trim();
    const value = make();
    writeFileSync(path, value + "\n", { mode: 0o600 });
    return value;
  }

  encryptionKey(): string {
    return this.persisted("encryption-key", () => randomBytes(32).toString("base64url"));
  }

  /** A port for the embedded Postgres, chosen once per project so that two projects do not collide. */
  postgresPort(): number {
    return Number(this.persisted("pg-port", () => String(54_000 + Math.floor(Math.random() * 900))));
  }

  get postgresDataDir(): string {
    return join(this.dir, "pg");
  }

  writeRuntime(runtime: { databaseUrl: string; encryptionKey: string; apiUrl: string; secretKey: string }): void {
    writeFileSync(join(this.dir, "runtime.json"), JSON.stringify(runtime, null, 2) + "\n", { mode: 0o600 });
  }
}
