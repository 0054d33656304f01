WITH now AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms),
next AS (
  SELECT id FROM tasks, now
   WHERE status = 'working' AND (lease_expires_ms IS NULL OR lease_expires_ms <= now.ms)
   ORDER BY created_ms, id LIMIT 1
   FOR UPDATE OF tasks SKIP LOCKED),
claimed AS (
  UPDATE tasks t SET lease_token = md5(random()::text), lease_expires_ms = now.ms + 60000,
         claimed_by = 'client-' || :client_id, attempts = attempts + 1
    FROM next, now WHERE t.id = next.id
  RETURNING t.id, t.lease_token)
INSERT INTO claims SELECT id, lease_token, :client_id, (SELECT ms FROM now) FROM claimed;
