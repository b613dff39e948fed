import type { FastifyInstance, InjectOptions } from "fastify";

/** What a test reads of an answer: status, headers and the body as text. */
export interface InjectedResponse {
  statusCode: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
  json<T = any>(): T;
}

/**
 * `app.inject` for requests that may reach an event stream (the session channel subscription,
 * which stays open for its long poll). The answer is taken as soon as its head is written: an
 * event stream is hung up on at once, as a client that goes away (its body is ""), and any other
 * answer is read whole. Without this, an injected subscription would hold the test until the
 * stream's timeout.
 */
export async function injectUntilHeaders(app: FastifyInstance, options: InjectOptions): Promise<InjectedResponse> {
  const res = await app.inject({ ...options, payloadAsStream: true });
  let body = "";
  if (String(res.headers["content-type"] ?? "").startsWith("text/event-stream")) {
    res.raw.res.destroy();
  } else {
    const chunks: Buffer[] = [];
    for await (const chunk of res.stream()) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
    body = Buffer.concat(chunks).toString("utf8");
  }
  return { statusCode: res.statusCode, headers: res.headers, body, json: () => JSON.parse(body) };
}
