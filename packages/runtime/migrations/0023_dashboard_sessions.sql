-- Dashboard sign-ins: a browser that signed in with a personal access token holds a random session
-- token in an httpOnly cookie; only its SHA-256 is stored. A session lasts until sign-out or
-- `expires_at`, and ends with the PAT it was made with (revoked or deleted: the row goes with it,
-- and a revoked PAT's sessions are refused on the next request). The CSRF token every dashboard
-- form carries is per session.
CREATE TABLE dashboard_sessions (
  token_hash   text PRIMARY KEY,
  user_id      text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  personal_access_token_id bigint NOT NULL REFERENCES personal_access_tokens(id) ON DELETE CASCADE,
  csrf_token   text NOT NULL,
  created_at   timestamptz NOT NULL,
  expires_at   timestamptz NOT NULL
);
CREATE INDEX dashboard_sessions_expiry ON dashboard_sessions (expires_at);
CREATE INDEX dashboard_sessions_pat ON dashboard_sessions (personal_access_token_id);
