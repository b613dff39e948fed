import { describe, expect, it } from "vitest";
import { task } from "@svc/runtime/sdk";
import { limitedQueues, rateLimitedQueues, startQueues } from "./queues.ts";

const run = async () => {};

describe("startQueues", () => {
  it("gives each task its own queue, and a named queue the strictest limit any of its tasks declares", () => {
    const queues = startQueues([
      task({ id: "a", queue: { name: "shared", concurrencyLimit: 5 }, run }),
      task({ id: "b", queue: { name: "shared" }, run }),
      task({ id: "c", queue: { name: "shared", concurrencyLimit: 2 }, run }),
      task({ id: "d", queue: { concurrencyLimit: 1 }, run }),
      task({ id: "e", run }),
    ]);
    expect([...queues]).toEqual([
      ["shared", 2],
      ["task/a", null],
      ["task/b", null],
      ["task/c", null],
      ["task/d", 1],
      ["task/e", null],
    ]);
  });
});

describe("limitedQueues and rateLimitedQueues", () => {
  it("count a queue with a rateLimit as limited: its own claim takes its runs", () => {
    const tasks = [
      task({ id: "rated", rateLimit: { limit: 10, period: "1s" }, run }),
      task({ id: "shared-rated", queue: { name: "openai", rateLimit: { limit: 100, period: "1m" } }, run }),
      task({ id: "shared-plain", queue: { name: "openai" }, run }),
      task({ id: "concurrency", queue: { concurrencyLimit: 2 }, run }),
      task({ id: "plain", run }),
    ];
    expect(limitedQueues(tasks).sort()).toEqual(["openai", "task/concurrency", "task/rated"]);
    expect([...rateLimitedQueues(tasks)].sort()).toEqual(["openai", "task/rated"]);
  });
});
