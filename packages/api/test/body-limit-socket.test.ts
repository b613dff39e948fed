import { request } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApi, type TestApi } from "./harness.ts";

let api: TestApi;
let port: number;
beforeAll(async () => {
  api = await startTestApi();
  await api.app.listen({ port: 0, host: "127.0.0.1" });
  port = (api.app.server.address() as AddressInfo).port;
});
afterAll(async () => api?.close());

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * Sends `size` bytes over a real socket in 64 KiB writes (with or without Content-Length) and
 * resolves with the answer once it has been read to its end; rejects on a socket error (EPIPE,
 * ECONNRESET) before that, which app.inject cannot show. The client keeps writing whatever the
 * server answers meanwhile, as curl and fetch do (until it has read a `Connection: close` answer:
 * node:http then ends its side of the connection itself).
 */
function send(path: string, size: number, options: { contentLength: boolean; headers?: Record<string, string> }): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { "content-type": "application/json", ...api.devAuth, ...options.headers };
    if (options.contentLength) headers["content-length"] = String(size);
    let answered = false;
    const req = request({ host: "127.0.0.1", port, method: "POST", path, headers }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk) => (body += chunk));
      res.on("end", () => {
        answered = true;
        resolve({ status: res.statusCode!, headers: res.headers, body });
      });
    });
    req.on("error", (error) => answered || reject(error));
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    let sent = 0;
    const writeMore = () => {
      while (sent < size) {
        const n = Math.min(chunk.length, size - sent);
        sent += n;
        if (!req.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void req.once("drain", writeMore);
      }
      req.end();
    };
    writeMore();
  });
}

describe("a body over the limit, over a real socket", () => {
  it("gets a readable 413 with Connection: close, with a Content-Length far over the limit", async () => {
    for (let i = 0; i < 5; i++) {
      const res = await send("/api/v1/tasks/hello/trigger", 24 * 1024 * 1024, { contentLength: true });
      expect(res.status).toBe(413);
      expect(JSON.parse(res.body)).toEqual({ error: "Request body too large" });
      expect(res.headers.connection).toBe("close");
    }
  });

  it("gets a readable 413 without a Content-Length (chunked), once the limit is crossed", async () => {
    for (let i = 0; i < 5; i++) {
      const res = await send("/api/v1/tasks/hello/trigger", 8 * 1024 * 1024, { contentLength: false });
      expect(res.status).toBe(413);
      expect(JSON.parse(res.body)).toEqual({ error: "Request body too large" });
    }
  });

  it("still answers a body within the limit on the same server", async () => {
    const res = await send("/api/v1/tasks/hello/trigger", 1024, { contentLength: true });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body).error).toBe("Request body is empty");
  });
});
