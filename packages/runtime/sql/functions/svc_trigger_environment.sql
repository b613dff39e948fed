-- The environment a trigger made in SQL names (svc_trigger, svc_batch_trigger): its id (`env_…`),
-- or `<project ref>/<slug>` (`proj_abc/prod`; `stg` for staging, as in the HTTP paths), which a
-- database trigger can write down without looking anything up. Raises invalid_parameter_value when
-- there is no such live environment.
CREATE OR REPLACE FUNCTION svc_trigger_environment(p_environment text) RETURNS TABLE (environment_id text, project_id text)
LANGUAGE plpgsql STABLE AS $$
BEGIN
  IF p_environment LIKE 'env\_%' THEN
    RETURN QUERY SELECT e.id, e.project_id FROM environments e WHERE e.id = p_environment AND e.archived_at IS NULL;
  ELSIF p_environment LIKE '%/%' THEN
    RETURN QUERY SELECT e.id, e.project_id FROM environments e JOIN projects p ON p.id = e.project_id
      WHERE p.ref = split_part(p_environment, '/', 1) AND e.parent_environment_id IS NULL
        AND e.slug = CASE split_part(p_environment, '/', 2) WHEN 'stg' THEN 'staging' ELSE split_part(p_environment, '/', 2) END;
  END IF;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = '22023',
      MESSAGE = format('environment: no environment %s (give its id, env_…, or <project ref>/<slug>, e.g. proj_abc/prod)', coalesce('"' || p_environment || '"', 'NULL'));
  END IF;
END;
$$;
