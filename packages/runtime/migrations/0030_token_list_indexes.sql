-- The waitpoint-token list (`GET /api/v1/waitpoints/tokens`, listTokenRows) filtered by status or
-- by idempotency key, over a long history (issue 19 §2).

-- WAITING and TIMED_OUT tokens in the list's order. Without it a status filter walked
-- waitpoints_list (every token) and skipped the others, or bitmap-scanned waitpoints_completed
-- (every finished waitpoint) when the planner expected few matches: 192 / 290 ms (p50 / p99) at
-- 10 M runs for a status no token has. COMPLETED tokens are left out, so completing a token (the
-- hot path: svc_complete_waitpoint) writes no entry here; a new token writes one (its WAITING row)
-- and a timeout one more. Completion and timeout were not HOT updates before this index either
-- (status is in waitpoints_due's predicate, completed_at in waitpoints_completed). COMPLETED, the
-- commonest status, is listed by walking waitpoints_list.
CREATE INDEX waitpoints_list_status ON waitpoints (environment_id, status, created_at, id)
  WHERE type = 'MANUAL' AND status <> 'COMPLETED';

-- Retired idempotency keys (moved to inactive_idempotency_key when a key past its TTL is reused;
-- the list still finds a token by them). Without it the filter `idempotency_key = $k OR
-- inactive_idempotency_key = $k` could not use waitpoints_idempotency for either arm and walked
-- every token of the environment: 183 / 215 ms at 10 M runs. Only tokens with a retired key have
-- an entry; the column changes once, off the hot paths (a create that reuses an expired key).
CREATE INDEX waitpoints_inactive_idempotency ON waitpoints (environment_id, inactive_idempotency_key)
  WHERE inactive_idempotency_key IS NOT NULL;
