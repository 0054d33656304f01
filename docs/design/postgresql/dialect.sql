\pset footer off
CREATE FUNCTION instr(haystack text, needle text) RETURNS integer LANGUAGE sql IMMUTABLE STRICT AS 'SELECT strpos(haystack, needle)';
PREPARE people(unknown, unknown, unknown, unknown) AS SELECT 1;
DEALLOCATE people;
-- parameters untyped, as the postgres crate sends them: does PG deduce every type?
PREPARE people AS SELECT id, name, active FROM clients WHERE ($1 IS NULL OR instr(lower(id), lower($1)) > 0 OR instr(lower(name), lower($1)) > 0)
  AND ($2 IS NULL OR active = $2) AND ($3 IS NULL OR id > $3) ORDER BY id LIMIT $4;
SELECT parameter_types FROM pg_prepared_statements WHERE name = 'people';
EXECUTE people('C', NULL, NULL, 10);
PREPARE feeds AS SELECT id FROM feed_secrets WHERE $1 IS NULL OR (kind = $1 AND target = $2) ORDER BY created_at, id;
SELECT parameter_types FROM pg_prepared_statements WHERE name = 'feeds';
PREPARE counter AS INSERT INTO id_counters (name, last) VALUES ('reflow', 1) ON CONFLICT (name) DO UPDATE SET last = last + 1 RETURNING last;
EXECUTE counter; EXECUTE counter;
PREPARE studio_up AS INSERT INTO studio (id, name, timezone, notice_minutes, clock, horizon_days) VALUES (1, $1, $2, $3, $4, $5)
  ON CONFLICT (id) DO UPDATE SET name = $1, timezone = $2, notice_minutes = $3, clock = $4, horizon_days = $5;
SELECT parameter_types FROM pg_prepared_statements WHERE name = 'studio_up';
PREPARE win AS INSERT INTO offline_windows (room_id, from_at, to_at, reason, created_at) VALUES ($1, $2, $3, $4, $5) RETURNING id;
EXECUTE win('r1', 1900000000, 1900003600, 'x', 0);
PREPARE bools AS SELECT undone_at IS NOT NULL, EXISTS (SELECT 1 FROM api_tokens WHERE name = $1 AND revoked_at IS NULL) FROM reflows;
SELECT parameter_types, result_types FROM pg_prepared_statements WHERE name = 'bools';
PREPARE hours AS SELECT DISTINCT start_at / 3600 FROM bookings WHERE status != 'cancelled';
SELECT result_types FROM pg_prepared_statements WHERE name = 'hours';
PREPARE tokens AS SELECT id FROM api_tokens ORDER BY created_at, rowid;
