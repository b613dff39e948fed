import type { ZodError } from "zod";

type Issue = ZodError["issues"][number];

/** What a required setting is, and an example of setting it: said when it is missing. */
const REQUIRED_SETTINGS: Record<string, string> = {
  DATABASE_URL: "the Postgres connection string, e.g. DATABASE_URL=postgres://user:password@host:5432/svc",
  SVC_ENCRYPTION_KEY:
    "the key that encrypts secret keys and env vars at rest, the same for the API, every worker and the CLI; make one with `openssl rand -base64 32` and keep it",
};

/**
 * The problems of a service's settings (environment variables), one line each: a missing one says
 * what it is and how to set it; a wrong one what it must be. Values are never repeated (a database
 * URL holds a password).
 */
export function settingsProblems(issues: readonly Issue[], env: NodeJS.ProcessEnv): string[] {
  return issues.map((issue) => {
    const name = issue.path.join(".");
    const value = env[name];
    if (value === undefined || value === "") return `${name} is not set: ${REQUIRED_SETTINGS[name] ?? "it is required"}`;
    const problem = wrongValue(issue);
    return problem.startsWith(name) ? problem : `${name}: ${problem}`;
  });
}

function wrongValue(issue: Issue): string {
  switch (issue.code) {
    case "invalid_type":
      return issue.expected === "number" ? "must be a number" : `must be a ${issue.expected}`;
    case "invalid_format":
      return issue.format === "url" ? "must be a URL (scheme://host…)" : `must be a ${issue.format}`;
    case "invalid_value":
      return `must be one of ${issue.values.map(String).join(", ")}`;
    case "too_small":
      return `must be at least ${String(issue.minimum)}${issue.origin === "string" ? " characters long" : ""}`;
    case "too_big":
      return `must be at most ${String(issue.maximum)}${issue.origin === "string" ? " characters long" : ""}`;
    default:
      return issue.message;
  }
}
