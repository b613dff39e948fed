-- Environment variables, one row per (environment, name). A preview branch (a child environment
-- of preview) stores only its own values; readers merge the parent's values under them.
-- Values are AES-256-GCM encrypted under the server key (SecretBox); names stay in the clear.
CREATE TABLE environment_variables (
  environment_id  text NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
  name            text NOT NULL,
  value_encrypted text NOT NULL,
  is_secret       boolean NOT NULL DEFAULT false,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (environment_id, name)
);

-- A PAT reaches the projects its user is a member of (directly or through the organisation);
-- these indexes serve that lookup and listing a user's tokens.
CREATE INDEX personal_access_tokens_user ON personal_access_tokens (user_id);
CREATE INDEX organization_members_user ON organization_members (user_id);
CREATE INDEX project_members_user ON project_members (user_id);
