// `pnpm packages:pack <folder>`: builds every package to JavaScript and packs it as the registry
// would serve it (publishConfig applied, workspace:* replaced by the version), into <folder>.
// The Docker image and the packed-install test both install these tarballs.
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
/** In dependency order. */
export const PACKAGES = ["runtime", "worker", "api", "cli"] as const;

export function packPackages(destination: string, options: { build?: boolean } = {}): string[] {
  const dest = resolve(destination);
  mkdirSync(dest, { recursive: true });
  // pnpm itself when we run under it (npm_execpath), else the one on PATH.
  const pnpm = process.env.npm_execpath?.includes("pnpm") ? [process.execPath, process.env.npm_execpath] : ["pnpm"];
  const run = (args: string[], cwd: string) => execFileSync(pnpm[0]!, [...pnpm.slice(1), ...args], { cwd, stdio: ["ignore", "ignore", "inherit"] });
  if (options.build !== false) run(["--filter", "./packages/*", "run", "build"], ROOT);
  for (const name of PACKAGES) run(["pack", "--pack-destination", dest], `${ROOT}packages/${name}`);
  return readdirSync(dest).filter((f) => f.endsWith(".tgz")).map((f) => `${dest}/${f}`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const destination = process.argv[2];
  if (!destination) {
    console.error("usage: pnpm packages:pack <folder>");
    process.exit(2);
  }
  for (const file of packPackages(destination)) console.log(file);
}
