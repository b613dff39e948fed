import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@svc/runtime/testing";
import { freePort } from "../../../scripts/embedded-postgres.ts";
import { makeProject, startSvc, type DevProject, type SvcProcess } from "./svc-process.ts";

// `svc dev` in a project of its own, edited as a person does: with sed -i (a rename over the file,
// as many editors save), then plain writes. The worker must reload on every save of a file it
// imports, and on nothing else.
let db: TestDatabase;
let project: DevProject;
let state: string;
let dev: SvcProcess;
let apiUrl: string;
let devKey: string;

const greeting = (text: string) => `export const greeting = ${JSON.stringify(text)};\n`;

beforeAll(async () => {
  db = await createTestDatabase();
  state = mkdtempSync(join(tmpdir(), "svc-dev-loop-state-"));
  project = makeProject({
    "src/tasks/greet.ts": `import { task } from "@svc/runtime";\nimport { greeting } from "../lib/greeting.ts";\n\nexport const greet = task({ id: "greet", run: async () => ({ text: greeting }) });\n`,
    "src/lib/greeting.ts": greeting("v1"),
    "src/lib/unused.ts": "export const unused = 1;\n",
  });
  const port = await freePort();
  apiUrl = `http://127.0.0.1:${port}`;
  dev = startSvc(["dev"], { cwd: project.dir, env: { DATABASE_URL: db.url, PORT: String(port), SVC_STATE_DIR: state, SVC_ENCRYPTION_KEY: undefined } });
  devKey = (await dev.until(/dev key\s+(svc_dev_\S+)/, 1, 80_000))[1]!;
  // Not the worker's "started": the files it loaded are watched a moment later, and a save before that is missed.
  await Promise.all([dev.until(/svc api listening/, 1, 80_000), dev.until(/watching \d+ files the tasks loaded for changes/, 1, 80_000)]);
}, 90_000);

afterAll(async () => {
  expect(await dev?.stop()).toBe(0);
  project?.close();
  rmSync(state, { recursive: true, force: true });
  await db?.drop();
});

/** The run's output once it ends; fails with svc's output when it has not ended in 20 s. */
async function runGreet(): Promise<unknown> {
  const headers = { authorization: `Bearer ${devKey}`, "content-type": "application/json" };
  const { id } = (await (await fetch(`${apiUrl}/api/v1/tasks/greet/trigger`, { method: "POST", headers, body: JSON.stringify({ payload: {} }) })).json()) as { id: string };
  const deadline = Date.now() + 20_000;
  for (;;) {
    const run = (await (await fetch(`${apiUrl}/api/v3/runs/${id}`, { headers })).json()) as { status: string; output?: unknown };
    if (["COMPLETED", "FAILED", "CRASHED", "SYSTEM_FAILURE"].includes(run.status)) return run.output ?? run;
    if (Date.now() > deadline) throw new Error(`${id} is still ${run.status} after 20 s; svc printed:\n${dev.output().slice(-4000)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe("svc dev's reload loop", () => {
  it("reloads on each save of an imported file, also after `sed -i` replaced it, and runs the new code", async () => {
    execFileSync("sed", ["-i", "s/v1/v2/", project.path("src/lib/greeting.ts")]);
    expect((await dev.until(/changed: (.*); reloading the worker/))[1]).toBe(join("src", "lib", "greeting.ts"));
    await dev.until(/worker reloaded: greet/);
    expect(await runGreet()).toEqual({ text: "v2" });

    // Node's fs.watch lost the file at the rename: this save used to reload nothing.
    project.write("src/lib/greeting.ts", greeting("v3"));
    expect((await dev.until(/changed: (.*); reloading the worker/, 2))[1]).toBe(join("src", "lib", "greeting.ts"));
    await dev.until(/worker reloaded: greet/, 2);
    expect(await runGreet()).toEqual({ text: "v3" });
  }, 90_000);

  it("does not reload for a file no task imports; the next reload names only the imported file", async () => {
    project.write("src/lib/unused.ts", "export const unused = 2;\n");
    project.write("notes.md", "x");
    project.write("src/tasks/greet.ts", `import { task } from "@svc/runtime";\nimport { greeting } from "../lib/greeting.ts";\n\nexport const greet = task({ id: "greet", run: async () => ({ text: greeting + "!" }) });\n`);
    expect((await dev.until(/changed: (.*); reloading the worker/, 3))[1]).toBe(join("src", "tasks", "greet.ts"));
    await dev.until(/worker reloaded: greet/, 3);
    expect(await runGreet()).toEqual({ text: "v3!" });
  }, 90_000);

  it("a new task file reloads; a file that breaks the worker keeps the old one serving, and its fix reloads", async () => {
    project.write("src/tasks/shout.ts", `import { task } from "@svc/runtime";\n\nexport const shout = task({ id: "shout", run: async () => "HEY" });\n`);
    expect((await dev.until(/changed: (.*); reloading the worker/, 4))[1]).toBe(join("src", "tasks", "shout.ts"));
    await dev.until(/worker reloaded: greet, shout|worker reloaded: shout, greet/);

    project.write("src/lib/greeting.ts", "export const greeting = ;\n");
    await dev.until(/the changed tasks did not load \(see above\); the previous worker keeps serving/);
    expect(await runGreet()).toEqual({ text: "v3!" });
    project.write("src/lib/greeting.ts", greeting("v4"));
    await dev.until(/worker reloaded: /, 5);
    expect(await runGreet()).toEqual({ text: "v4!" });
  }, 90_000);
});

describe("what svc dev prints of runs", () => {
  it("one line per start, wait, resume, failure (with its error) and completion, and the run's own lines, each after its run id", async () => {
    project.write(
      "src/tasks/chatty.ts",
      `import { logger, task, wait } from "@svc/runtime";\n\nexport const chatty = task({ id: "chatty", retry: { maxAttempts: 1 }, run: async (payload: { fail?: boolean }) => {\n  logger.info("charging card", { amount: 5 });\n  console.log("console line");\n  await wait.for({ seconds: 1 });\n  if (payload.fail) throw new Error("card declined");\n  return "ok";\n} });\n`,
    );
    await dev.until(/worker reloaded: .*chatty/);
    const headers = { authorization: `Bearer ${devKey}`, "content-type": "application/json" };
    const trigger = async (payload: unknown) =>
      ((await (await fetch(`${apiUrl}/api/v1/tasks/chatty/trigger`, { method: "POST", headers, body: JSON.stringify({ payload }) })).json()) as { id: string }).id;
    const ok = await trigger({});
    const failing = await trigger({ fail: true });
    await dev.until(new RegExp(`${ok} \\| completed chatty`));
    await dev.until(new RegExp(`${failing} \\| FAILED chatty: card declined`));
    const linesOf = (id: string) => dev.output().split("\n").filter((l) => l.includes(`worker | ${id} | `)).map((l) => l.slice(l.indexOf(`${id} | `) + id.length + 3))
        // svc's notice that replayed lines are not printed again, said once per worker, in whichever run replays first.
        .filter((l) => !l.startsWith("svc: "));
    expect(linesOf(ok)).toEqual(["started chatty (attempt 1)", 'charging card {"attributes":{"amount":5}}', "console line", "waiting chatty", "resumed chatty (attempt 1)", "completed chatty"]);
    // The lines the resumed run logs again while replaying are not printed again (they are at debug).
    expect(linesOf(failing)).toEqual(["started chatty (attempt 1)", 'charging card {"attributes":{"amount":5}}', "console line", "waiting chatty", "resumed chatty (attempt 1)", "FAILED chatty: card declined"]);
  });
});

describe("runs no worker serves", () => {
  it("says once per task when runs are queued for a task no worker serves, naming the oldest run, until a worker serves it", async () => {
    const headers = { authorization: `Bearer ${devKey}`, "content-type": "application/json" };
    const trigger = async (taskId: string) =>
      ((await (await fetch(`${apiUrl}/api/v1/tasks/${taskId}/trigger`, { method: "POST", headers, body: JSON.stringify({ payload: {} }) })).json()) as { id: string }).id;
    const first = await trigger("greet-later");
    const second = await trigger("greet-later");
    const notice = (task: string) => new RegExp(`(run_[0-9a-z]+) \\(${task}\\) is queued(?: \\(and \\d+ more\\))? but no worker serves ${task}: is it exported from your tasks file\\?`);
    expect((await dev.until(notice("greet-later")))[1]).toBe(first);
    // Later checks (the ones that see these runs) say nothing more of greet-later while it stays unserved.
    await trigger("typo-one");
    await dev.until(notice("typo-one"));
    await trigger("typo-two");
    await dev.until(notice("typo-two"));
    expect(dev.output().match(new RegExp(notice("greet-later").source, "g"))).toHaveLength(1);

    // Exported now: the new worker serves the task and runs both.
    project.write("src/tasks/later.ts", `import { task } from "@svc/runtime";\n\nexport const later = task({ id: "greet-later", run: async () => "late" });\n`);
    await dev.until(new RegExp(`${first} \\| completed greet-later`));
    await dev.until(new RegExp(`${second} \\| completed greet-later`));
  });
});

describe("svc dev whose first worker does not load", () => {
  it("watches what it got to, and reloads once the file is fixed", async () => {
    const db2 = await createTestDatabase();
    const state2 = mkdtempSync(join(tmpdir(), "svc-dev-loop-state-"));
    const broken = makeProject({ "src/tasks/greet.ts": `import { task } from "@svc/runtime";\n\nexport const greet = task({ id: "greet", run: async () => ( });\n` });
    const second = startSvc(["dev"], { cwd: broken.dir, env: { DATABASE_URL: db2.url, PORT: String(await freePort()), SVC_STATE_DIR: state2, SVC_ENCRYPTION_KEY: undefined } });
    try {
      await second.until(/the tasks did not load \(see above\); fix them and save again/);
      broken.write("src/tasks/greet.ts", `import { task } from "@svc/runtime";\n\nexport const greet = task({ id: "greet", run: async () => "ok" });\n`);
      await second.until(/worker reloaded: greet/);
    } finally {
      expect(await second.stop()).toBe(0);
      broken.close();
      rmSync(state2, { recursive: true, force: true });
      await db2.drop();
    }
  }, 60_000);
});
