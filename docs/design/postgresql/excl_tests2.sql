\set QUIET 1
\pset footer off
TRUNCATE bookings, offline_windows CASCADE;
UPDATE rooms SET buffer_minutes = 15 WHERE id = 'r1';
INSERT INTO bookings (seq,id,room_id,client_id,engineer_id,start_at,end_at,party_size,requires,status,pinned,created_at,updated_at) VALUES
  (1,'A','r1','c1','e1',1800000000,1800003600,1,'[]','confirmed',0,0,0),
  (2,'B','r1','c2',NULL,1800004500,1800008100,1,'[]','confirmed',0,0,0);
\echo '--- E9: r1 turnaround 15 -> 60 min, occupies recomputed for future bookings: A and B now clash: 23P01 at commit'
BEGIN;
UPDATE rooms SET buffer_minutes = 60 WHERE id = 'r1';
UPDATE bookings SET occupies = NULL WHERE room_id = 'r1' AND start_at > 1799000000;
COMMIT;
\echo '--- E9b: same change, forced (update_room flags the later one, B, displaced): accepted'
BEGIN;
UPDATE rooms SET buffer_minutes = 60 WHERE id = 'r1';
UPDATE bookings SET occupies = NULL WHERE room_id = 'r1' AND start_at > 1799000000;
UPDATE bookings SET displaced = 1 WHERE id = 'B';
COMMIT;
SELECT id, occupies, displaced FROM bookings ORDER BY start_at;
\echo '--- E10: client c1 in r2 overlapping A: 23P01 bookings_no_client_overlap'
INSERT INTO bookings (seq,id,room_id,client_id,start_at,end_at,party_size,requires,status,pinned,created_at,updated_at)
  VALUES (3,'Q','r2','c1',1800001800,1800005400,1,'[]','confirmed',0,0,0);
\echo '--- E10b: client c1 in r2 starting exactly when A ends (no turnaround for people): accepted'
INSERT INTO bookings (seq,id,room_id,client_id,start_at,end_at,party_size,requires,status,pinned,created_at,updated_at)
  VALUES (3,'Q','r2','c1',1800003600,1800007200,1,'[]','confirmed',0,0,0);
\echo '--- E11: engineer e1 in r2 overlapping A: 23P01 bookings_no_engineer_overlap'
INSERT INTO bookings (seq,id,room_id,client_id,engineer_id,start_at,end_at,party_size,requires,status,pinned,created_at,updated_at)
  VALUES (4,'R','r2','c3','e1',1800000000,1800001800,1,'[]','confirmed',0,0,0);
\echo '--- E11b: two overlapping bookings with no engineer (c2, c3 in r2 and r1...): NULL engineers never clash: accepted'
INSERT INTO bookings (seq,id,room_id,client_id,engineer_id,start_at,end_at,party_size,requires,status,pinned,created_at,updated_at)
  VALUES (4,'R','r2','c3',NULL,1800000000,1800001800,1,'[]','confirmed',0,0,0);
\echo '--- E12: the final-state trigger and the revision trigger'
INSERT INTO tasks (id,kind,request,month,status,created_ms,updated_ms,poll_interval_ms) VALUES ('t9','reflow_month','{}','2027-01','completed',0,0,1);
UPDATE tasks SET status_message = 'x' WHERE id = 't9';
UPDATE bookings SET notes = 'n' WHERE id = 'A';
UPDATE bookings SET party_size = party_size WHERE id = 'A';
SELECT id, revision FROM bookings WHERE id = 'A';
\echo '--- E13: one live reflow per month'
INSERT INTO tasks (id,kind,request,month,status,created_ms,updated_ms,poll_interval_ms) VALUES ('t10','reflow_month','{}','2027-02','working',0,0,1);
INSERT INTO tasks (id,kind,request,month,status,created_ms,updated_ms,poll_interval_ms) VALUES ('t11','reflow_month','{}','2027-02','working',0,0,1);
