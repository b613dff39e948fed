import http from "node:http";

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

/**
 * POSTs JSON over a keep-alive node:http agent and returns the status and body text. The bench's
 * client: it costs ~0.3 ms less per request than fetch here, so the figures measure svc, not
 * the client.
 */
export function postJson(url: string, body: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: "POST", agent, headers: { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(body) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

export interface TextResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** One request over the same keep-alive agent, any method; the body (if any) is sent as given. */
export function request(url: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<TextResponse> {
  const body = options.body;
  const headers = body === undefined ? options.headers : { ...options.headers, "content-length": String(Buffer.byteLength(body)) };
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: options.method ?? "GET", agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString() }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}
