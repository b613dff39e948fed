/** What `svc dev` prints once the database is ready: where the API is, the dev key, what to try. */
export function devBanner(info: { apiUrl: string; projectRef: string; devKey: string; configPath: string }): string {
  const { apiUrl, devKey } = info;
  return `
svc is starting
  API           ${apiUrl}   (OpenAPI: ${apiUrl}/api/openapi.json)
  dashboard     ${apiUrl}/dashboard   (sign in with the token \`svc access you@example.com\` prints)
  project ref   ${info.projectRef}
  dev key       ${devKey}
  tasks         from ${info.configPath} (the worker reloads when a file it loaded is saved)

try it:
  curl -s -X POST ${apiUrl}/api/v1/tasks/hello-world/trigger \\
    -H "Authorization: Bearer ${devKey}" \\
    -H "Content-Type: application/json" -d '{"payload":{"name":"Ada"}}'
  curl -s ${apiUrl}/api/v3/runs/<run id> -H "Authorization: Bearer ${devKey}"

or from another terminal in this folder (the CLI finds this API and key in .svc/runtime.json):
  svc runs trigger hello-world --payload '{"name":"Ada"}' --wait
  svc runs list

from code (@svc/runtime or @trigger.dev/sdk):
  SERVICE_API_URL=${apiUrl} SERVICE_SECRET_KEY=${devKey}
  TRIGGER_API_URL=${apiUrl} TRIGGER_SECRET_KEY=${devKey}

all keys: svc keys show --project ${info.projectRef}
`;
}
