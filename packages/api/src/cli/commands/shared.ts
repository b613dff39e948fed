import type { EnvironmentSlug, ProjectCredentials } from "@svc/runtime/engine";
import { table } from "../command.ts";

/** `{ projectRef, environments: { dev: { secretKey } … } }`: the shape `svc init --json` prints. */
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
