import pg from "pg";

/** The server's current WAL position (for fullPageImagesByRelation). */
export async function walPosition(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<{ lsn: string }>(`SELECT pg_current_wal_lsn()::text AS lsn`)).rows[0]!.lsn;
  } finally {
    await client.end();
  }
}

/**
 * The relations of this database whose pages the WAL between two positions carried as full-page
 * images, most first ("runs_pkey 9,731, runs 2,310"): which writes pay for touching a page for the
 * first time since a checkpoint. pg_walinspect (Postgres 16+, a superuser: the benchmark's own
 * server); the reason instead where it cannot be read.
 */
export async function fullPageImagesByRelation(url: string, from: string, to: string, top = 6): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`CREATE EXTENSION IF NOT EXISTS pg_walinspect`);
    const { rows } = await client.query<{ rel: string; images: string }>(
      `SELECT coalesce(pg_filenode_relation(b.reltablespace, b.relfilenode)::regclass::text, 'filenode ' || b.relfilenode) AS rel, count(*) AS images
       FROM pg_get_wal_block_info($1::pg_lsn, $2::pg_lsn, false) b
       WHERE b.block_fpi_length > 0 AND b.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
       GROUP BY 1 ORDER BY 2 DESC LIMIT $3`,
      [from, to, top],
    );
    return rows.map((r) => `${r.rel} ${Number(r.images).toLocaleString("en-US")}`).join(", ") || "none";
  } catch (error) {
    return `not read (${(error as Error).message})`;
  } finally {
    await client.end();
  }
}
