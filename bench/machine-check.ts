import pg from "pg";
import { line, now, percentiles } from "./stats.ts";

/**
 * How fast this machine is right now: one Postgres round trip (`SELECT 1`, a wake-up of a backend
 * and of this process) and one durable commit (a WAL fsync). Shared machines drift by a factor of
 * two; figures taken minutes apart compare only alongside these.
 */
export async function machineCheck(url: string, when: string, n = 1000): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query("DROP TABLE IF EXISTS svc_bench_machine_check");
    await client.query("CREATE TABLE svc_bench_machine_check (n int)");
    // Untimed first: a fresh process's first queries measure its JIT warming up, not the machine.
    for (let i = 0; i < 300; i++) await client.query(i % 4 === 0 ? "INSERT INTO svc_bench_machine_check VALUES (1)" : "SELECT 1");
    const roundTrips: number[] = [];
    const commits: number[] = [];
    for (let i = 0; i < n; i++) {
      let t0 = now();
      await client.query("SELECT 1");
      roundTrips.push(now() - t0);
      if (i % 4 === 0) {
        t0 = now();
        await client.query("INSERT INTO svc_bench_machine_check VALUES (1)");
        commits.push(now() - t0);
      }
    }
    await client.query("DROP TABLE svc_bench_machine_check");
    return [
      `## Machine check, ${when}: how fast this machine is right now`,
      line("Postgres round trip (SELECT 1)", percentiles(roundTrips)),
      line("durable commit (one-row INSERT, WAL fsync)", percentiles(commits)),
    ];
  } finally {
    await client.end();
  }
}
