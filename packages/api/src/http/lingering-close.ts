import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import type { FastifyInstance } from "fastify";

export interface LingerLimits {
  /** Most bytes of an unwanted body read and discarded before the connection is reset anyway. */
  maxBytes: number;
  /** Longest the rest of an unwanted body is waited for. */
  maxMs: number;
}

export const DEFAULT_LINGER: LingerLimits = { maxBytes: 64 * 1024 * 1024, maxMs: 10_000 };

/**
 * Answers sent before the request body has fully arrived (a 413, a refused upload URL, a 429) must
 * be readable by the client that is still sending. Such an answer closes the connection
 * (`Connection: close`: the rest of the body is not worth reading), and Node then destroys the
 * socket as soon as the answer is flushed; data still arriving on a closed socket makes the kernel
 * reset the connection, and the client sees EPIPE or ECONNRESET instead of the answer. So, as
 * nginx's lingering close does, the rest of the body is read and discarded (no memory kept) until
 * it ends, and only then is the socket closed; a client that sends more than `maxBytes` or takes
 * longer than `maxMs` is cut off.
 */
export function registerLingeringClose(app: FastifyInstance, limits: LingerLimits = DEFAULT_LINGER): void {
  app.addHook("onSend", async (request, reply, payload) => {
    const raw = request.raw;
    // `complete` is false until the whole body has been parsed off a real socket (app.inject's
    // requests have no such field).
    if (raw.complete !== false || typeof raw.socket?.destroySoon !== "function") return payload;
    reply.header("connection", "close");
    lingerBeforeClosing(raw, raw.socket, limits);
    return payload;
  });
}

function lingerBeforeClosing(raw: IncomingMessage, socket: Socket, limits: LingerLimits): void {
  const destroySoon = socket.destroySoon.bind(socket);
  let answered = false;
  let discarded = 0;
  const timer = setTimeout(() => socket.destroy(), limits.maxMs);
  timer.unref();
  socket.once("close", () => clearTimeout(timer));
  const close = () => {
    clearTimeout(timer);
    destroySoon();
  };
  // Node's server calls destroySoon once a `Connection: close` answer is flushed; wait for the body.
  socket.destroySoon = () => {
    answered = true;
    if (raw.complete) close();
  };
  raw.on("data", (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > limits.maxBytes) socket.destroy();
  });
  raw.once("end", () => answered && close());
  raw.resume();
}
