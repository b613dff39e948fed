import { request } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { PACKET_DOWNLOAD_URL_SECONDS, PACKET_UPLOAD_URL_SECONDS } from "@svc/runtime/engine";
import { limitsOf } from "../src/http/limits.ts";
import { FakeClock, startTestApi, type TestApi } from "./harness.ts";

const BUDGET = 1024 * 1024;
const clock = new FakeClock(new Date("2026-03-01T12:00:00Z"));
let api: TestApi;
let port: number;
beforeAll(async () => {
  api = await startTestApi({ clock, limits: { packetUploadBufferBytes: BUDGET } });
  await api.app.listen({ port: 0, host: "127.0.0.1" });
  port = (api.app.server.address() as AddressInfo).port;
});
afterAll(async () => api?.close());

const pathOf = (url: string) => new URL(url).pathname;

async function presign(file: string): Promise<string> {
  const res = await api.app.inject({ method: "PUT", url: `/api/v2/packets/${encodeURIComponent(file)}`, headers: api.devAuth });
  expect(res.statusCode, res.body).toBe(200);
  return pathOf(res.json().presignedUrl);
}

function upload(path: string, body: string | Buffer, contentType = "application/json") {
  return api.app.inject({ method: "PUT", url: path, headers: { "content-type": contentType }, payload: body });
}

async function downloadUrl(file: string): Promise<string> {
  const res = await api.app.inject({ method: "GET", url: `/api/v1/packets/${encodeURIComponent(file)}`, headers: api.devAuth });
  expect(res.statusCode, res.body).toBe(200);
  return pathOf(res.json().presignedUrl);
}

/** A PUT over a real socket that declares `length` bytes and sends only `sent` of them for now. */
function openUpload(path: string, length: number, sent: number) {
  let resolveAnswer: (answer: { status: number; body: string }) => void;
  const answer = new Promise<{ status: number; body: string }>((resolve) => (resolveAnswer = resolve));
  const req = request({ host: "127.0.0.1", port, method: "PUT", path, headers: { "content-type": "application/octet-stream", "content-length": String(length) } }, (res) => {
    let body = "";
    res.setEncoding("utf8");
    res.on("data", (chunk) => (body += chunk));
    res.on("end", () => resolveAnswer({ status: res.statusCode!, body }));
  });
  req.on("error", () => {}); // the answer (or its absence) is what the tests look at
  if (sent > 0) req.write(Buffer.alloc(sent, 0x61));
  else req.flushHeaders();
  return { answer, finish: () => req.end(Buffer.alloc(length - sent, 0x61)), abort: () => req.destroy() };
}

describe("packet downloads", () => {
  it("never serve uploaded content as a page of the API's origin", async () => {
    const path = await presign("trigger/html/payload.json");
    const page = "<html><script>fetch('/api/v3/runs', { headers: { authorization: localStorage.key } })</script></html>";
    expect((await upload(path, page, "text/html")).statusCode).toBe(200);
    const got = await api.app.inject({ method: "GET", url: await downloadUrl("trigger/html/payload.json") });
    expect(got.statusCode).toBe(200);
    expect(got.headers["content-type"]).toBe("application/octet-stream");
    expect(got.headers["x-content-type-options"]).toBe("nosniff");
    expect(got.headers["content-disposition"]).toBe("attachment");
    expect(got.headers["content-security-policy"]).toBe("default-src 'none'; sandbox");
    expect(got.body).toBe(page);
  });

  it("keep the uploaded type when the SDK reads it (superjson), with the same protective headers", async () => {
    const path = await presign("trigger/sj/payload.json");
    await upload(path, '{"json":{"a":1}}', "application/super+json");
    const got = await api.app.inject({ method: "GET", url: await downloadUrl("trigger/sj/payload.json") });
    expect(got.headers["content-type"]).toBe("application/super+json");
    expect(got.headers["x-content-type-options"]).toBe("nosniff");
    expect(got.headers["content-security-policy"]).toBe("default-src 'none'; sandbox");
  });

  it(`expire ${PACKET_DOWNLOAD_URL_SECONDS} s after they were handed out`, async () => {
    await upload(await presign("trigger/exp/payload.json"), "{}");
    const url = await downloadUrl("trigger/exp/payload.json");
    clock.advance((PACKET_DOWNLOAD_URL_SECONDS - 1) * 1000);
    expect((await api.app.inject({ method: "GET", url })).statusCode).toBe(200);
    clock.advance(1000);
    const expired = await api.app.inject({ method: "GET", url });
    expect(expired.statusCode).toBe(404);
    expect(expired.json().error).toMatch(/Download URL expired/);
    expect((await api.app.inject({ method: "GET", url: await downloadUrl("trigger/exp/payload.json") })).statusCode).toBe(200);
  });

  it("cannot have their expiry changed without the signature breaking", async () => {
    await upload(await presign("trigger/forge/payload.json"), "{}");
    const url = await downloadUrl("trigger/forge/payload.json");
    const [subject, sig] = url.split("/").pop()!.split(".");
    const [env, file, expiresAt] = JSON.parse(Buffer.from(subject!, "base64url").toString());
    const later = Buffer.from(JSON.stringify([env, file, expiresAt + 86_400])).toString("base64url");
    expect((await api.app.inject({ method: "GET", url: `/api/v1/packets/download/${later}.${sig}` })).statusCode).toBe(404);
  });
});

describe("packet upload URLs", () => {
  it("are single-use", async () => {
    const path = await presign("trigger/once/payload.json");
    expect((await upload(path, '{"n":1}')).statusCode).toBe(200);
    const again = await upload(path, '{"n":2}');
    expect(again.statusCode).toBe(409);
    expect(again.json().error).toMatch(/single-use/);
    const got = await api.app.inject({ method: "GET", url: await downloadUrl("trigger/once/payload.json") });
    expect(got.body).toBe('{"n":1}');
  });

  it(`expire ${PACKET_UPLOAD_URL_SECONDS} s after presigning`, async () => {
    const path = await presign("trigger/late/payload.json");
    clock.advance(PACKET_UPLOAD_URL_SECONDS * 1000);
    const late = await upload(path, "{}");
    expect(late.statusCode).toBe(404);
    expect(late.json().error).toMatch(/Upload URL expired/);
  });

  it("refuse a bogus token before reading the body", { timeout: 10_000 }, async () => {
    // 50 MB declared, nothing sent: the answer can only come from a check made before the body.
    for (const token of ["env_nope.abc", "no-dot"]) {
      const bogus = openUpload(`/api/v1/packets/upload/${token}`, 50_000_000, 0);
      const answer = await bogus.answer;
      bogus.abort();
      expect(answer.status).toBe(404);
      expect(JSON.parse(answer.body).error).toMatch(/Upload URL not found/);
    }
  });

  it("require a Content-Length, so that the budget can be reserved before the body", async () => {
    const path = await presign("trigger/chunked/payload.json");
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request({ host: "127.0.0.1", port, method: "PUT", path, headers: { "content-type": "application/json", "transfer-encoding": "chunked" } }, (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk) => (body += chunk));
        res.on("end", () => resolve({ status: res.statusCode!, body }));
      });
      req.on("error", reject);
      req.end("{}");
    });
    expect(answer.status).toBe(411);
    expect(JSON.parse(answer.body).error).toMatch(/Content-Length required/);
  });

  it("hold at most the upload budget in memory: a packet over it is a 413, uploads beyond it wait with a 429", { timeout: 10_000 }, async () => {
    const budget = limitsOf(api.app).packetUploads;
    const tooBig = await upload(await presign("trigger/big/payload.json"), Buffer.alloc(BUDGET + 1));
    expect(tooBig.statusCode).toBe(413);
    expect(tooBig.json().error).toMatch(/buffers at most/);

    const first = openUpload(await presign("trigger/first/payload.json"), 700_000, 1000);
    await vi.waitFor(() => expect(budget.inUse).toBe(700_000));
    const secondPath = await presign("trigger/second/payload.json");
    const refused = await upload(secondPath, Buffer.alloc(700_000));
    expect(refused.statusCode).toBe(429);
    expect(refused.headers["retry-after"]).toBe("1");
    first.finish();
    expect((await first.answer).status).toBe(200);
    await vi.waitFor(() => expect(budget.inUse).toBe(0));
    expect((await upload(secondPath, Buffer.alloc(700_000))).statusCode).toBe(200);
  });

  it("give the budget back when the client goes away mid-upload", async () => {
    const budget = limitsOf(api.app).packetUploads;
    const dropped = openUpload(await presign("trigger/dropped/payload.json"), 500_000, 1000);
    await vi.waitFor(() => expect(budget.inUse).toBe(500_000));
    dropped.abort();
    await vi.waitFor(() => expect(budget.inUse).toBe(0));
  });
});
