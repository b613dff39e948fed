-- The elements of a JSON array, as json_array_elements returns them, but planned as one row.
--
-- Statements that take a batch as one JSON parameter join its rows to `runs` by id. Postgres
-- estimates a built-in set-returning function at 100 rows, so the plan cached for such a
-- statement hashes `runs` whole whenever a sequential scan of it costs less than 100 index
-- probes: in a database of a few thousand runs, or in any database whose statistics were taken
-- when it was new (a prepared statement keeps its generic plan until the table is analyzed). Read
-- through this function (ROWS 1; plpgsql, so that it is not inlined back into
-- json_array_elements), each row is looked up by its index at every size. Almost every such batch
-- is one row; a batch of many is as many index probes, the right plan for a table of any size.
--
-- Used as `svc_input_rows($1) e CROSS JOIN LATERAL json_to_record(e) AS i(…)`, which reads each
-- element as json_to_recordset would.
CREATE OR REPLACE FUNCTION svc_input_rows(p_array json) RETURNS SETOF json
LANGUAGE plpgsql STABLE ROWS 1 AS $$
BEGIN
  RETURN QUERY SELECT json_array_elements(p_array);
END;
$$;
