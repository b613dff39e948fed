import pg from "pg";

/**
 * Lets the previous scenario's writes settle before the next one is measured: a CHECKPOINT
 * writes out the dirty pages it left (hundreds of MB after the throughput scenario), which the
 * checkpointer would otherwise trickle to disk during the next scenario, slowing its WAL flushes
 * and taking CPU. pgbench's advice, for the same reason. Needs a superuser (or pg_checkpoint);
 * without one the scenarios run unsettled and the report says so.
 */
export async function settle(adminUrl: string): Promise<string | null> {
  if (process.env.BENCH_SETTLE === "0") return null;
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query("CHECKPOINT");
    return null;
  } catch (error) {
    return `(not settled between scenarios: CHECKPOINT failed: ${(error as Error).message})`;
  } finally {
    await client.end();
  }
}
