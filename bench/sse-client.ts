import http from "node:http";

/**
 * A minimal SSE reader for the bench (node:http, no parsing library): calls `onRecord` with each
 * record's seq_num and body of every `event: batch` frame, as soon as its bytes arrive.
 */
export function openSse(
  url: string,
  headers: Record<string, string>,
  onRecord: (record: { seq_num: number; body: string; headers: [string, string][] }, at: number) => void,
): Promise<{ close(): void }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: false, headers: { accept: "text/event-stream", ...headers } }, (res) => {
      if (res.statusCode !== 200) {
        reject(new Error(`subscribe: ${res.statusCode}`));
        res.resume();
        return;
      }
      res.setEncoding("utf8");
      let buffer = "";
      res.on("data", (chunk: string) => {
        const at = performance.now();
        buffer += chunk;
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const frame = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          if (!frame.startsWith("event: batch")) continue;
          const data = frame.slice(frame.indexOf("data: ") + 6);
          for (const record of JSON.parse(data).records) onRecord(record, at);
        }
      });
      res.on("error", () => {});
      resolve({ close: () => req.destroy() });
    });
    req.on("error", reject);
  });
}
