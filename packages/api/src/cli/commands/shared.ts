import type { Queryable } from "@svc/runtime/db";
import { listAllProjects, type EnvironmentSlug, type ProjectCredentials, type ProjectSummary } from "@svc/runtime/engine";
import { table, UsageError } from "../command.ts";

/** The project a command means when none is named: the only one there is. */
export async function onlyProject(db: Queryable): Promise<ProjectSummary> {
  const projects = await listAllProjects(db);
  if (projects.length === 1) return projects[0]!;
  if (projects.length === 0) throw new UsageError("there is no project yet: run `svc setup` (or `svc dev`) first");
  throw new UsageError(`there are ${projects.length} projects: pass --project <ref> (${projects.map((p) => p.ref).join(", ")})`);
}

/** `{ projectRef, environments: { dev: { secretKey } … } }`: the shape `svc setup --json` prints. */
export function credentialsJson(credentials: ProjectCredentials) {
  const environments = {} as Record<EnvironmentSlug, { secretKey: string }>;
  for (const slug of ["dev", "staging", "prod", "preview"] as const) {
    const env = credentials.environments[slug];
    if (env) environments[slug] = { secretKey: env.secretKey };
  }
  return { projectRef: credentials.projectRef, environments };
}

export function credentialsText(credentials: ProjectCredentials, title = `Project ${credentials.projectRef}`): string {
  const { environments } = credentialsJson(credentials);
  return `${title}\n${table(Object.entries(environments).map(([slug, { secretKey }]) => [slug, secretKey]))}`;
}
