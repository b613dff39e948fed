import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { appendRecords, type Environment } from "@svc/runtime/engine";
import type { ListeningApi } from "./client-server.ts";
import type { DashboardBrowser } from "./dashboard-browser-client.ts";
import { pageStreamEvents, startSignedInDashboard, streamUrlOf, type SignedInDashboard } from "./dashboard-session-helpers.ts";
import { append, createSessionOk } from "./sessions-helpers.ts";
import { envelope } from "./sse-reader.ts";

let api: ListeningApi;
let browser: DashboardBrowser;
let env: Environment;
let base: string;
let openStream: SignedInDashboard["openStream"];

beforeAll(async () => {
  ({ api, browser, env, base, openStream } = await startSignedInDashboard());
});
afterAll(async () => api?.close());

describe("session page live records", () => {
  it("streams records appended after the page was rendered, from its last seq, then stops when the browser goes away", async () => {
    const s = await createSessionOk(api, { externalId: "live-page" });
    await append(api, s.id, "in", "before");
    const page = await browser.get(`${base}/live-page`);
    const url = streamUrlOf(page.body)!;
    expect(url).toBe(`${base}/${s.id}/stream?in=1&out=0`);
    // Appended between the render and the stream's start: not missed.
    await append(api, s.id, "out", "between");
    const subscribers = api.deps.sessionStreams!.size;
    const res = await openStream(url);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
    const stream = pageStreamEvents(res);
    const [between] = await stream.next();
    expect(between).toMatchObject({ event: "out", id: "1.1" });
    expect(envelope(between!.records[0]!).data).toBe("between");
    expect(api.deps.sessionStreams!.size).toBe(subscribers + 2);

    await append(api, s.id, "in", "<script>live</script>");
    const [live] = await stream.next();
    expect(live).toMatchObject({ event: "in", id: "2.1" });
    expect(live!.records.map((r) => [r.seq_num, envelope(r).data])).toEqual([[2, "<script>live</script>"]]);
    await appendRecords(api.engine, env, s.id, "out", [{ data: null, headers: [["trigger-control", "turn-complete"]] }]);
    const [control] = await stream.next();
    expect(control).toMatchObject({ event: "out", id: "2.2", records: [{ seq_num: 2, body: "", headers: [["trigger-control", "turn-complete"]] }] });

    await stream.cancel();
    await vi.waitFor(() => expect(api.deps.sessionStreams!.size).toBe(subscribers));
  });

  it("resumes after Last-Event-ID as EventSource reconnects", async () => {
    const s = await createSessionOk(api);
    for (let i = 1; i <= 3; i++) await append(api, s.id, "in", `m${i}`);
    await append(api, s.id, "out", "o1");
    const stream = pageStreamEvents(await openStream(`${base}/${s.id}/stream?in=0&out=0`, { "last-event-id": "2.1" }));
    const [next] = await stream.next();
    expect(next).toMatchObject({ event: "in", id: "3.1" });
    expect(next!.records.map((r) => r.seq_num)).toEqual([3]);
    await append(api, s.id, "out", "o2");
    expect((await stream.next())[0]).toMatchObject({ event: "out", id: "3.2" });
    expect(stream.pending).toBe(0);
    await stream.cancel();
  });

  it("sends a closed session's unread records, then `end`; its page opens no stream", async () => {
    const s = await createSessionOk(api);
    await append(api, s.id, "in", "one");
    await append(api, s.id, "in", "two");
    await api.app.inject({ method: "POST", url: `/api/v1/sessions/${s.id}/close`, headers: api.devAuth, payload: {} });
    const page = await browser.get(`${base}/${s.id}`);
    expect(streamUrlOf(page.body)).toBeNull();
    expect(page.body).toContain("no longer active");
    const stream = pageStreamEvents(await openStream(`${base}/${s.id}/stream?in=1&out=0`));
    const events = await stream.next(2);
    expect(events.map((e) => e.event)).toEqual(["in", "end"]);
    expect(events[0]!.records.map((r) => r.seq_num)).toEqual([2]);
    await stream.ended;
  });
});
