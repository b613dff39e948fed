import type { Logger } from "pino";

/**
 * SIGTERM/SIGINT: stop claiming, let in-flight runs finish (up to `timeoutMs`), then exit.
 * Runs still in flight at the deadline are left to their leases, which lapse, so another worker
 * picks them up. A second signal exits at once.
 */
export function installShutdown(drain: () => Promise<void>, cleanup: () => Promise<void>, logger: Logger, timeoutMs: number): void {
  let stopping = false;
  const handler = async (signal: string) => {
    if (stopping) {
      logger.warn({ signal }, "second signal: exiting now");
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal, timeoutMs }, "draining in-flight runs");
    const deadline = new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), timeoutMs).unref());
    const result = await Promise.race([drain().then(() => "drained" as const), deadline]);
    if (result === "timeout") logger.warn("drain timed out; remaining runs will be recovered by other workers");
    await cleanup().catch(() => {});
    logger.info("worker stopped");
    process.exit(0);
  };
  process.on("SIGTERM", () => void handler("SIGTERM"));
  process.on("SIGINT", () => void handler("SIGINT"));
}
