-- The scope of a run's idempotency key, as the SDK sends it beside the key its user gave
-- (`idempotencyKeyOptions: { key, scope }`; the key is idempotency_key_user): run, attempt or
-- global. The task's context shows both (ctx.run.idempotencyKey, ctx.run.idempotencyKeyScope),
-- as Trigger.dev's does. Null for runs without a key, without a scope, or made before this.
ALTER TABLE runs ADD COLUMN idempotency_key_scope text
  CONSTRAINT runs_idempotency_key_scope_check CHECK (idempotency_key_scope IN ('run', 'attempt', 'global'));
