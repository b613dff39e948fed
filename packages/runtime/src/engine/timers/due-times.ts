import type { Queryable } from "../../db/queryable.ts";
import type { DueWork } from "./due-work.ts";

/** A kind's nextDue and nextDueSql, from one query whose one row's one column (`at`) is the time. */
export function dueAt(sql: string): Pick<DueWork, "nextDue" | "nextDueSql"> {
  return {
    nextDueSql: sql,
    async nextDue(db) {
      const { rows } = await db.query<{ at: Date | null }>(sql);
      return rows[0]?.at ?? null;
    },
  };
}

/** Each kind's nextDue, in `work`'s order: those with a nextDueSql in one statement, the others one by one. */
export async function nextDueTimes(db: Queryable, work: DueWork[]): Promise<(Date | null)[]> {
  const asSql = work.flatMap((w, i) => (w.nextDueSql ? [{ sql: w.nextDueSql, i }] : []));
  const [combined, ...others] = await Promise.all([
    asSql.length > 0 ? db.query<Record<string, Date | null>>(`SELECT ${asSql.map((q, k) => `(${q.sql}) AS d${k}`).join(", ")}`) : null,
    ...work.map((w) => (w.nextDueSql ? null : w.nextDue(db))),
  ]);
  const dues = others.map((due) => due ?? null);
  asSql.forEach((q, k) => (dues[q.i] = combined!.rows[0]![`d${k}`] ?? null));
  return dues;
}
