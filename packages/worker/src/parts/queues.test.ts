import { describe, expect, it } from "vitest";
import { task } from "@svc/runtime/sdk";
import { startQueues } from "./queues.ts";

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
