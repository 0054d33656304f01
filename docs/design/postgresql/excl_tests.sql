\set QUIET 1
\pset footer off
INSERT INTO studio (id, name, timezone, notice_minutes) VALUES (1, 's', 'Europe/London', 0);
INSERT INTO rooms (id, name, capacity, features, hours, buffer_minutes) VALUES ('r1','R1',4,'[]','[]',15), ('r2','R2',4,'[]','[]',0);
INSERT INTO clients (id, name) VALUES ('c1','C1'),('c2','C2'),('c3','C3');
INSERT INTO engineers (id, name) VALUES ('e1','E1'),('e2','E2');
-- t0 = 1800000000
\echo '--- E1: A in r1 [t0, t0+1h), c1, e1: accepted'
INSERT INTO bookings (seq,id,room_id,client_id,engineer_id,start_at,end_at,party_size,requires,status,pinned,created_at,updated_at)
  VALUES (1,'A','r1','c1','e1',1800000000,1800003600,1,'[]','confirmed',0,0,0);
SELECT id, occupies, in_offline FROM bookings;
\echo '--- E2: B overlaps A in r1: expect 23P01 bookings_no_room_overlap'
INSERT INTO bookings (seq,id,room_id,client_id,start_at,end_at,party_size,requires,status,pinned,created_at,updated_at)
  VALUES (2,'B','r1','c2',1800001800,1800005400,1,'[]','confirmed',0,0,0);
\echo '--- E3: B starts when A ends (turnaround 15 min): expect 23P01'
INSERT INTO bookings (seq,id,room_id,client_id,start_at,end_at,party_size,requires,status,pinned,created_at,updated_at)
  VALUES (2,'B','r1','c2',1800003600,1800007200,1,'[]','confirmed',0,0,0);
\echo '--- E3b: B starts 14 min after A ends: expect 23P01'
INSERT INTO bookings (seq,id,room_id,client_id,start_at,end_at,party_size,requires,status,pinned,created_at,updated_at)
  VALUES (2,'B','r1','c2',1800004440,1800008000,1,'[]','confirmed',0,0,0);
\echo '--- E4: B starts exactly 15 min after A ends: accepted (store: other.end + buffer > new.start is false)'
INSERT INTO bookings (seq,id,room_id,client_id,start_at,end_at,party_size,requires,status,pinned,created_at,updated_at)
  VALUES (2,'B','r1','c2',1800004500,1800008100,1,'[]','confirmed',0,0,0);
\echo '--- E5: Z ends 15 min before A starts: accepted; Z ending 14 min before A: 23P01 (the buffer follows the earlier booking)'
INSERT INTO bookings (seq,id,room_id,client_id,start_at,end_at,party_size,requires,status,pinned,created_at,updated_at)
  VALUES (3,'Z','r1','c3',1799992800,1799999100,1,'[]','confirmed',0,0,0);
INSERT INTO bookings (seq,id,room_id,client_id,start_at,end_at,party_size,requires,status,pinned,created_at,updated_at)
  VALUES (4,'Z2','r1','c3',1799992800,1799999160,1,'[]','confirmed',0,0,0);
\echo '--- E6: a cancelled booking over A: accepted; reviving it (status back to confirmed): 23P01'
INSERT INTO bookings (seq,id,room_id,client_id,start_at,end_at,party_size,requires,status,pinned,created_at,updated_at)
  VALUES (5,'X','r1','c2',1800000000,1800003600,1,'[]','cancelled',0,0,0);
UPDATE bookings SET status = 'confirmed' WHERE id = 'X';
\echo '--- E7: A flagged displaced: an overlapping booking is accepted; clearing the flag again: 23P01'
BEGIN;
UPDATE bookings SET displaced = 1 WHERE id = 'A';
INSERT INTO bookings (seq,id,room_id,client_id,start_at,end_at,party_size,requires,status,pinned,created_at,updated_at)
  VALUES (6,'D','r1','c2',1800000000,1800003600,1,'[]','confirmed',0,0,0);
COMMIT;
UPDATE bookings SET displaced = 0 WHERE id = 'A';
DELETE FROM bookings WHERE id = 'D'; UPDATE bookings SET displaced = 0 WHERE id = 'A';
\echo '--- E8: an offline window over A: A.in_offline = 1, a booking over A is accepted (client c1 elsewhere at the same time too)'
INSERT INTO offline_windows (room_id, from_at, to_at, reason, created_at) VALUES ('r1', 1800000000, 1800001000, 'repair', 0);
SELECT id, in_offline, revision FROM bookings WHERE id = 'A';
INSERT INTO bookings (seq,id,room_id,client_id,start_at,end_at,party_size,requires,status,pinned,created_at,updated_at)
  VALUES (7,'P','r2','c1',1800000000,1800003600,1,'[]','confirmed',0,0,0);
\echo '--- E8b: removing the window revives A, which now overlaps P for client c1: 23P01 (the DELETE is refused)'
DELETE FROM offline_windows WHERE room_id = 'r1';
\echo '--- E8c: same removal with the revived clash flagged displaced in the same transaction: accepted'
BEGIN;
DELETE FROM offline_windows WHERE room_id = 'r1';
UPDATE bookings SET displaced = 1 WHERE id = 'A';
COMMIT;
SELECT id, displaced, in_offline FROM bookings WHERE id IN ('A','P');
DELETE FROM bookings WHERE id = 'P'; UPDATE bookings SET displaced = 0 WHERE id = 'A';
\echo '--- E8d: moving A into an offline window clears it from occupancy; moving it out again restores it'
INSERT INTO offline_windows (room_id, from_at, to_at, reason, created_at) VALUES ('r2', 1800000000, 1800100000, 'flood', 0);
UPDATE bookings SET room_id = 'r2' WHERE id = 'A';
SELECT id, room_id, occupies, in_offline FROM bookings WHERE id = 'A';
UPDATE bookings SET room_id = 'r1' WHERE id = 'A';
SELECT id, room_id, occupies, in_offline FROM bookings WHERE id = 'A';
\echo '--- E9: r1 turnaround 15 -> 60 min: A and B (15 min apart) now clash: 23P01 at commit'
BEGIN;
UPDATE rooms SET buffer_minutes = 60 WHERE id = 'r1';
UPDATE bookings SET occupies = NULL WHERE room_id = 'r1' AND start_at > 1799000000;
COMMIT;
\echo '--- E9b: same change, forced: the later booking (B) flagged displaced in the same transaction: accepted'
BEGIN;
UPDATE rooms SET buffer_minutes = 60 WHERE id = 'r1';
UPDATE bookings SET occupies = NULL WHERE room_id = 'r1' AND start_at > 1799000000;
UPDATE bookings SET displaced = 1 WHERE id = 'B';
COMMIT;
SELECT id, occupies, displaced FROM bookings WHERE room_id = 'r1' ORDER BY start_at;
\echo '--- E10: client c1 in r2 overlapping A: 23P01 bookings_no_client_overlap'
INSERT INTO bookings (seq,id,room_id,client_id,start_at,end_at,party_size,requires,status,pinned,created_at,updated_at)
  VALUES (8,'Q','r2','c1',1800001800,1800005400,1,'[]','confirmed',0,0,0);
\echo '--- E10b: client c1 in r2 starting exactly when A ends (no turnaround for people): accepted'
DELETE FROM offline_windows WHERE room_id = 'r2';
INSERT INTO bookings (seq,id,room_id,client_id,start_at,end_at,party_size,requires,status,pinned,created_at,updated_at)
  VALUES (8,'Q','r2','c1',1800003600,1800007200,1,'[]','confirmed',0,0,0);
\echo '--- E11: engineer e1 in r2 overlapping A: 23P01 bookings_no_engineer_overlap; NULL engineers never clash'
INSERT INTO bookings (seq,id,room_id,client_id,engineer_id,start_at,end_at,party_size,requires,status,pinned,created_at,updated_at)
  VALUES (9,'R','r2','c3','e1',1800000000,1800001800,1,'[]','confirmed',0,0,0);
\echo '--- E12: a swap in one transaction (A <-> Q places, both clients differ? no: A and Q are both c1, so swap A(r1) with B(r1 displaced)...)'
UPDATE bookings SET displaced = 0, start_at = 1800020000, end_at = 1800023600 WHERE id = 'B';
BEGIN;
UPDATE bookings SET start_at = 1800020000, end_at = 1800023600 WHERE id = 'A';
UPDATE bookings SET start_at = 1800000000, end_at = 1800003600 WHERE id = 'B';
COMMIT;
SELECT id, room_id, client_id, occupies, revision FROM bookings WHERE status <> 'cancelled' ORDER BY start_at;
