/**
 * The engine's error hierarchy. Each has a stable `code`; the API maps codes to HTTP statuses
 * in one table (packages/api/src/http/errors.ts). Anything else is a bug and becomes a 500.
 */
export class SvcError extends Error {
  readonly code: string = "svc_error";
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Input that can never succeed as sent (400). */
export class ValidationError extends SvcError {
  override readonly code = "validation";
}

/** Well-formed input the current state refuses (422). */
export class UnprocessableError extends SvcError {
  override readonly code = "unprocessable";
}

/** Input over a size limit (413). */
export class TooLargeError extends SvcError {
  override readonly code = "too_large";
}

export class NotFoundError extends SvcError {
  override readonly code = "not_found";
}

/** A state conflict that retrying will not fix (409, sent with x-should-retry: false). */
export class ConflictError extends SvcError {
  override readonly code = "conflict";
}

export class AuthenticationError extends SvcError {
  override readonly code = "unauthenticated";
}

export class PermissionError extends SvcError {
  override readonly code = "forbidden";
}

/** A run state change that the transition table does not allow. */
export class IllegalTransitionError extends SvcError {
  override readonly code = "illegal_transition";
  constructor(
    readonly from: string,
    readonly to: string,
  ) {
    super(`illegal run transition ${from} -> ${to}`);
  }
}

/**
 * The database's migrations or function files cannot be brought up to date by this build (an
 * applied migration whose file changed, two files with one id, a failing statement). Startup
 * stops: the message says which file and what to do.
 */
export class MigrationError extends SvcError {
  override readonly code = "migration";
}
