// TaskEnv writes the env that task code reads; here into a plain object instead of process.env.
import { describe, expect, it } from "vitest";
import { TaskEnv } from "../src/task-env.ts";

describe("TaskEnv", () => {
  it("replaces the environment's variables, removing only those it set and that are gone", () => {
    const target: Record<string, string | undefined> = { PATH: "/bin" };
    const env = new TaskEnv(target);
    env.applyVariables({ A: "1", B: "2" });
    expect(target).toEqual({ PATH: "/bin", A: "1", B: "2" });
    env.applyVariables({ B: "3" });
    expect(target).toEqual({ PATH: "/bin", B: "3" });
  });

  it("sets SDK defaults without overriding what the operator set, skipping absent values", () => {
    const target: Record<string, string | undefined> = { SERVICE_API_URL: "https://mine" };
    new TaskEnv(target).setDefaults({ SERVICE_API_URL: "http://default", SERVICE_SECRET_KEY: "svc_dev_x", SERVICE_PREVIEW_BRANCH: null });
    expect(target).toEqual({ SERVICE_API_URL: "https://mine", SERVICE_SECRET_KEY: "svc_dev_x" });
  });
});
