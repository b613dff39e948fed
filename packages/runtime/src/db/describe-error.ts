/**
 * What went wrong connecting to Postgres, for a newcomer: `unreachable` (nothing answers at the
 * address), `unavailable` (a server answers but takes no connections now: starting up, shutting
 * down, full), `missing_database` (the server is there, the database is not) or
 * `refused_credentials` (the server refused the user or password).
 */
export type DatabaseErrorKind = "unreachable" | "unavailable" | "missing_database" | "refused_credentials";

export interface DatabaseErrorDescription {
  kind: DatabaseErrorKind;
  /**
   * An outage, which may end by itself: worth waiting for. A missing database or refused
   * credentials is a mistake in DATABASE_URL or the server's setup, which retrying never fixes.
   */
  transient: boolean;
  /** One sentence saying what is wrong and what to do; never the URL's password. */
  message: string;
}

/**
 * Turns an error from connecting to the database at `url` into a sentence a newcomer can act on,
 * or undefined when it is not a connection error (a statement that failed on its merits, a bug).
 *
 * @example
 * const described = describeDatabaseError(error, config.DATABASE_URL);
 * console.error(described?.message ?? redactDatabaseUrl(String(error), config.DATABASE_URL));
 */
export function describeDatabaseError(error: unknown, url: string): DatabaseErrorDescription | undefined {
  const target = targetOf(url);
  for (const { code, message } of codesOf(error)) {
    const described = describeCode(code, redactDatabaseUrl(message, url), target);
    if (described) return described;
  }
  const messages = messagesOf(error).map((m) => redactDatabaseUrl(m, url));
  if (messages.some((m) => CONNECT_TIMEOUT_MESSAGES.some((t) => m.includes(t)))) return unreachable(target, "connection timed out");
  if (messages.some((m) => m.includes("Connection terminated"))) {
    return { kind: "unavailable", transient: true, message: `Postgres at ${target.where} closed the connection (${messages[0]})` };
  }
  // node-postgres' own check, before it sends anything: the server asked for a password the URL does not have.
  if (messages.some((m) => m.includes("client password must be a string"))) return refused(target, "the server asks for a password and DATABASE_URL has none");
  return undefined;
}

function describeCode(code: string, message: string, target: Target): DatabaseErrorDescription | undefined {
  switch (code) {
    case "ECONNREFUSED":
      return unreachable(target, "connection refused");
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return unreachable(target, `host "${target.host}" not found`);
    case "ETIMEDOUT":
      return unreachable(target, "connection timed out");
    case "EHOSTUNREACH":
      return unreachable(target, "host unreachable");
    case "ENETUNREACH":
      return unreachable(target, "network unreachable");
    case "3D000": {
      const createdb = `createdb -h ${target.host} -p ${target.port}${target.user ? ` -U ${target.user}` : ""} ${target.database}`;
      return {
        kind: "missing_database",
        transient: false,
        message: `database "${target.database}" does not exist on ${target.where}: create it with \`${createdb}\` or point DATABASE_URL at an existing database`,
      };
    }
    case "28P01":
    case "28000":
      return refused(target, message);
  }
  if (UNAVAILABLE_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code)) {
    return { kind: "unavailable", transient: true, message: `Postgres at ${target.where} is not taking connections right now (${message})` };
  }
  return undefined;
}

/** `text` with the password of `url` (as written, and decoded) replaced by `***`. */
export function redactDatabaseUrl(text: string, url: string): string {
  let password = "";
  try {
    password = new URL(url).password;
  } catch {
    return text;
  }
  if (password.length === 0) return text;
  let decoded = password;
  try {
    decoded = decodeURIComponent(password);
  } catch {
    // not percent-encoded: the text has it as written
  }
  return text.split(password).join("***").split(decoded).join("***");
}

interface Target {
  /** `host:port`, as the messages name it. */
  where: string;
  host: string;
  port: string;
  user?: string;
  database: string;
}

function unreachable(target: Target, reason: string): DatabaseErrorDescription {
  return {
    kind: "unreachable",
    transient: true,
    message: `cannot reach Postgres at ${target.where} (${reason}): is it running? Start it, or run \`svc dev\` (in svc's repository: \`pnpm start\`), which runs an embedded one, or set DATABASE_URL to a running server`,
  };
}

function refused(target: Target, reason: string): DatabaseErrorDescription {
  return {
    kind: "refused_credentials",
    transient: false,
    message: `Postgres at ${target.where} refused ${target.user ? `user "${target.user}"` : "the connection"} (${reason}): check the user and password in DATABASE_URL`,
  };
}

// A connection cut off; Postgres' admin_shutdown, crash_shutdown, cannot_connect_now (starting up,
// shutting down, recovering), too_many_connections. Class 08 (connection exceptions) by pattern.
const UNAVAILABLE_CODES = new Set(["ECONNRESET", "EPIPE", "57P01", "57P02", "57P03", "53300"]);

// node-postgres' messages for a connection attempt that ran out of time (no code).
const CONNECT_TIMEOUT_MESSAGES = ["timeout exceeded when trying to connect", "Connection terminated due to connection timeout"];

/** The codes on the error, its causes and the errors of an AggregateError (a host with several addresses), nearest first. */
function codesOf(error: unknown): { code: string; message: string }[] {
  const codes: { code: string; message: string }[] = [];
  const seen = new Set<unknown>();
  const queue: unknown[] = [error];
  while (queue.length > 0 && seen.size < 20) {
    const e = queue.shift();
    if (!e || typeof e !== "object" || seen.has(e)) continue;
    seen.add(e);
    const { code, message, cause } = e as { code?: unknown; message?: unknown; cause?: unknown };
    if (typeof code === "string" && code.length > 0) codes.push({ code, message: typeof message === "string" && message.length > 0 ? message : code });
    queue.push(cause, ...(e instanceof AggregateError ? e.errors : []));
  }
  return codes;
}

function messagesOf(error: unknown): string[] {
  const messages: string[] = [];
  for (let e = error, depth = 0; e && typeof e === "object" && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const { message } = e as { message?: unknown };
    if (typeof message === "string") messages.push(message);
  }
  return messages;
}

/** Where the URL points, as Postgres clients read it (default port 5432, default database the user's name). */
function targetOf(url: string): Target {
  try {
    const parsed = new URL(url);
    const decode = (text: string) => {
      try {
        return decodeURIComponent(text);
      } catch {
        return text;
      }
    };
    const user = parsed.username ? decode(parsed.username) : undefined;
    const host = parsed.searchParams.get("host") || decode(parsed.hostname) || "localhost";
    const database = decode(parsed.pathname.replace(/^\//, "")) || user || "postgres";
    const port = parsed.searchParams.get("port") || parsed.port || "5432";
    return { where: `${host}:${port}`, host, port, ...(user ? { user } : {}), database };
  } catch {
    return { where: "the address DATABASE_URL names (it is not a valid URL)", host: "localhost", port: "5432", database: "postgres" };
  }
}
