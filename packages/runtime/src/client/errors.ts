// Errors the management client throws. A non-2xx response becomes an ApiError subclass chosen by
// status (the same names and mapping as @trigger.dev/sdk), its message taken from `body.error`.

/**
 * A request the API answered with a non-2xx status.
 *
 * @example
 * try {
 *   await runs.retrieve("run_missing");
 * } catch (error) {
 *   if (error instanceof NotFoundError) console.log("no such run");
 *   else if (error instanceof ApiError) console.log(error.status, error.message);
 * }
 */
export class ApiError extends Error {
  constructor(
    /** HTTP status; undefined for a connection failure. */
    readonly status: number | undefined,
    message: string,
    /** The parsed response body (JSON), when there was one. */
    readonly body?: unknown,
    readonly headers?: Headers,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = new.target.name;
  }

  /** The error class for a status, with the server's message (`body.error`, a string or `{ message }`). */
  static generate(status: number, body: unknown, headers: Headers | undefined, fallbackMessage: string): ApiError {
    const message = messageFromBody(body) ?? fallbackMessage;
    const ErrorClass = errorClassFor(status);
    return new ErrorClass(status, message, body, headers);
  }
}

/** 400: the request can never succeed as sent. */
export class BadRequestError extends ApiError {}
/** 401: missing, unknown, expired or wrong-kind credential. */
export class AuthenticationError extends ApiError {}
/** 403: a valid credential without the needed scope or membership. */
export class PermissionDeniedError extends ApiError {}
/** 404: no such resource (in the credential's environment). */
export class NotFoundError extends ApiError {}
/** 409: a state conflict. */
export class ConflictError extends ApiError {}
/** 422: well-formed input the current state refuses. */
export class UnprocessableEntityError extends ApiError {}
/** 429: too many requests; retried automatically before this is thrown. */
export class RateLimitError extends ApiError {}
/** 5xx: the server failed; retried automatically before this is thrown. */
export class InternalServerError extends ApiError {}

/** The server could not be reached (DNS, refused connection, reset), after retries. */
export class ApiConnectionError extends ApiError {
  constructor(message: string, options?: ErrorOptions) {
    super(undefined, message, undefined, undefined, options);
  }
}

/** A 2xx response whose body is not what the API promises (e.g. not JSON). */
export class ApiResponseError extends ApiError {}

function errorClassFor(status: number): typeof ApiError {
  switch (status) {
    case 400:
      return BadRequestError;
    case 401:
      return AuthenticationError;
    case 403:
      return PermissionDeniedError;
    case 404:
      return NotFoundError;
    case 409:
      return ConflictError;
    case 422:
      return UnprocessableEntityError;
    case 429:
      return RateLimitError;
    default:
      return status >= 500 ? InternalServerError : ApiError;
  }
}

function messageFromBody(body: unknown): string | undefined {
  if (typeof body === "string" && body.trim()) return body.trim();
  if (typeof body !== "object" || body === null) return undefined;
  const error = (body as { error?: unknown }).error;
  if (typeof error === "string" && error) return error;
  if (typeof error === "object" && error !== null && typeof (error as { message?: unknown }).message === "string") {
    return (error as { message: string }).message;
  }
  const message = (body as { message?: unknown }).message;
  return typeof message === "string" && message ? message : undefined;
}
