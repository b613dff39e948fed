import { createServer } from "node:net";

/**
 * Why the API could not listen on `host:port`, found out before svc dev starts anything (and
 * prints a key); null when the port is free. Another program can still take it in between: the
 * API's own start-up error says the same then.
 */
export function portProblem(port: number, host: string): Promise<string | null> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", (error: NodeJS.ErrnoException) => {
      if (error.code === "EADDRINUSE") resolve(`port ${port} is in use (another svc dev, or another program): stop it, or start svc dev with PORT=<another port>`);
      else if (error.code === "EACCES") resolve(`port ${port} needs privileges this user lacks: start svc dev with PORT=<a port above 1023>`);
      else if (error.code === "EADDRNOTAVAIL") resolve(`HOST=${host} is not an address of this machine`);
      else resolve(`cannot listen on ${host}:${port}: ${error.message}`);
    });
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(null)));
  });
}
