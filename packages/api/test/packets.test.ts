import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { INLINE_PACKET_LIMIT, loadStoredPacket } from "@svc/runtime/engine";
import { startTestApi, type TestApi } from "./harness.ts";

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

/** The path part of a presigned URL (the harness's apiUrl is http://svc.test). */
const pathOf = (url: string) => new URL(url).pathname;

async function presign(file: string, headers: Record<string, string> = api.devAuth) {
  return api.app.inject({ method: "PUT", url: `/api/v2/packets/${file}`, headers });
}

async function upload(url: string, body: string | Buffer, contentType = "application/super+json") {
  return api.app.inject({ method: "PUT", url: pathOf(url), headers: { "content-type": contentType }, payload: body });
}

async function trigger(payload: unknown, payloadType = "application/store") {
  return api.app.inject({ method: "POST", url: "/api/v1/tasks/big/trigger", headers: api.devAuth, payload: { payload, options: { payloadType } } });
}

describe("packets", () => {
  it("round-trips a payload: presign (%2F-encoded path), upload without credentials, trigger with application/store, retrieve", async () => {
    const res = await presign("trigger%2Fpacket_abc%2Fpayload.json");
    expect(res.statusCode).toBe(200);
    const { presignedUrl, storagePath } = res.json();
    expect(storagePath).toBe("trigger/packet_abc/payload.json");
    expect(presignedUrl).toMatch(/^http:\/\/svc\.test\/api\/v1\/packets\/upload\//);

    const content = JSON.stringify({ json: { big: "x".repeat(200_000), when: "2025-01-01T00:00:00.000Z" }, meta: { values: { when: ["Date"] } } });
    const put = await upload(presignedUrl, content);
    expect(put.statusCode).toBe(200);
    expect(put.json()).toEqual({ ok: true });

    const triggered = await trigger(storagePath);
    expect(triggered.statusCode, triggered.body).toBe(200);
    const runId = triggered.json().id;
    const { rows } = await api.db.pool.query(`SELECT payload, payload_type, environment_id FROM runs WHERE id = $1`, [runId]);
    const stored = await loadStoredPacket(api.db.pool, rows[0].environment_id, { data: rows[0].payload, type: rows[0].payload_type });
    expect(stored).toEqual({ data: content, type: "application/super+json" });

    const run = (await api.app.inject({ method: "GET", url: `/api/v3/runs/${runId}`, headers: api.devAuth })).json();
    expect(run.payload).toEqual({ big: "x".repeat(200_000), when: "2025-01-01T00:00:00.000Z" });

    const replayed = await api.app.inject({ method: "POST", url: `/api/v1/runs/${runId}/replay`, headers: api.devAuth });
    expect(replayed.statusCode).toBe(200);
  });

  it("accepts the file as plain path segments too, and stores bytes of any content type as sent", async () => {
    const { presignedUrl, storagePath } = (await presign("runs/run_1/output.bin")).json();
    expect(storagePath).toBe("runs/run_1/output.bin");
    const bytes = Buffer.from([0, 1, 2, 250, 255]);
    expect((await upload(presignedUrl, bytes, "application/octet-stream")).statusCode).toBe(200);
    const download = await api.app.inject({ method: "GET", url: `/api/v1/packets/${encodeURIComponent(storagePath)}`, headers: api.devAuth });
    expect(download.statusCode).toBe(200);
    const got = await api.app.inject({ method: "GET", url: pathOf(download.json().presignedUrl) });
    expect(got.statusCode).toBe(200);
    expect(got.headers["content-type"]).toBe("application/octet-stream");
    expect(Buffer.from(got.rawPayload)).toEqual(bytes);
    // Invalid JSON under a JSON content type is still just bytes here.
    const again = (await presign("runs/run_1/output.json")).json();
    expect((await upload(again.presignedUrl, "{not json", "application/json")).statusCode).toBe(200);
  });

  it("takes packets over the 3 MiB body limit of other routes", async () => {
    const { presignedUrl } = (await presign("trigger%2Fwide%2Fpayload.bin")).json();
    const wide = await upload(presignedUrl, Buffer.alloc(5 * 1024 * 1024, 0x62), "application/octet-stream");
    expect(wide.statusCode, wide.body).toBe(200);
  });

  it("refuses to trigger with a packet that was never presigned or never uploaded", async () => {
    const unknown = await trigger("trigger/nope/payload.json");
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().error).toMatch(/not found/);
    const { storagePath } = (await presign("trigger%2Fpending%2Fpayload.json")).json();
    const pending = await trigger(storagePath);
    expect(pending.statusCode).toBe(400);
    expect(pending.json().error).toMatch(/has not been uploaded/);
    const notString = await trigger({ a: 1 });
    expect(notString.statusCode).toBe(400);
  });

  it("keeps packets per environment", async () => {
    const { presignedUrl, storagePath } = (await presign("trigger%2Fmine%2Fpayload.json")).json();
    await upload(presignedUrl, '{"json":1}');
    const prod = { authorization: `Bearer ${api.project.environments.prod.secretKey}` };
    const res = await api.app.inject({ method: "POST", url: "/api/v1/tasks/big/trigger", headers: prod, payload: { payload: storagePath, options: { payloadType: "application/store" } } });
    expect(res.statusCode).toBe(400);
    const download = await api.app.inject({ method: "GET", url: `/api/v1/packets/${encodeURIComponent(storagePath)}`, headers: prod });
    expect(download.statusCode).toBe(404);
  });

  it("returns a download URL instead of inlining a payload above the inline limit", async () => {
    const { presignedUrl, storagePath } = (await presign("trigger%2Fhuge%2Fpayload.json")).json();
    const content = JSON.stringify({ json: { big: "y".repeat(INLINE_PACKET_LIMIT + 10) } });
    await upload(presignedUrl, content);
    const runId = (await trigger(storagePath)).json().id;
    const run = (await api.app.inject({ method: "GET", url: `/api/v3/runs/${runId}`, headers: api.devAuth })).json();
    expect(run).not.toHaveProperty("payload");
    expect(run.payloadPresignedUrl).toMatch(/\/api\/v1\/packets\/download\//);
    const got = await api.app.inject({ method: "GET", url: pathOf(run.payloadPresignedUrl) });
    expect(got.headers["content-type"]).toBe("application/super+json");
    expect(got.body).toBe(content);
  });

  it("invalidates the old upload and download URLs when a path is presigned again", async () => {
    const first = (await presign("trigger%2Fagain%2Fp.json")).json();
    await upload(first.presignedUrl, '{"json":1}');
    const oldDownload = (await api.app.inject({ method: "GET", url: `/api/v1/packets/${encodeURIComponent(first.storagePath)}`, headers: api.devAuth })).json().presignedUrl;
    const second = (await presign("trigger%2Fagain%2Fp.json")).json();
    expect(second.presignedUrl).not.toBe(first.presignedUrl);
    expect((await upload(first.presignedUrl, '{"json":2}')).statusCode).toBe(404);
    expect((await api.app.inject({ method: "GET", url: pathOf(oldDownload) })).statusCode).toBe(404);
    expect((await upload(second.presignedUrl, '{"json":3}')).statusCode).toBe(200);
  });

  it("answers bad input with 4xx", async () => {
    expect((await presign("trigger%2Fx.json", {})).statusCode).toBe(401);
    expect((await presign("..%2Fetc%2Fpasswd")).statusCode).toBe(400);
    expect((await presign("%2Fabs.json")).statusCode).toBe(400);
    expect((await presign("a%00b")).statusCode).toBe(400);
    expect((await upload("http://svc.test/api/v1/packets/upload/env_x.nope", "{}")).statusCode).toBe(404);
    expect((await upload("http://svc.test/api/v1/packets/upload/no-dot", "{}")).statusCode).toBe(404);
    expect((await upload("http://svc.test/api/v1/packets/upload/bad%00token", "{}")).statusCode).toBe(400);
    for (const token of ["garbage", "a.b", `${Buffer.from("[1,2]").toString("base64url")}.x`]) {
      expect((await api.app.inject({ method: "GET", url: `/api/v1/packets/download/${token}` })).statusCode, token).toBe(404);
    }
    expect((await api.app.inject({ method: "GET", url: "/api/v1/packets/trigger%2Fnever.json", headers: api.devAuth })).statusCode).toBe(404);
  });
});
