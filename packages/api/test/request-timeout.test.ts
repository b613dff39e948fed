import { connect } from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApi, type TestApi } from "./harness.ts";

// A client that sends a body a byte at a time must not hold its connection for ever.
let api: TestApi;
let port: number;
beforeAll(async () => {
  api = await startTestApi({ limits: { requestTimeoutMs: 500 } });
  await api.app.listen({ port: 0, host: "127.0.0.1" });
  port = (api.app.server.address() as AddressInfo).port;
});
afterAll(async () => api?.close());

describe("a request that does not arrive in time", () => {
  it("is answered 408 and its connection closed", async () => {
    const socket = connect(port, "127.0.0.1");
    let received = "";
    socket.on("data", (chunk) => (received += chunk.toString()));
    const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
    socket.write(`POST /api/v1/waitpoints/tokens/waitpoint_x/callback/abc HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`);
    // A byte now and then, never the whole body.
    const trickle = setInterval(() => socket.writable && socket.write(" "), 100);
    await closed;
    clearInterval(trickle);
    expect(received).toMatch(/^HTTP\/1\.1 408/);
  });
});
