//! The bookings a server keeps in memory (a pool's stores) answer every query and busy read as the
//! table does (a store of its own), on both backends: after the first read, after changes made
//! through another connection (new, cancelled, moved, edited, displaced by an offline window),
//! and after a deletion made by hand in SQL.

use crate::support::{at, on_both, session, small_studio};
use chrono::Duration;
use studioflow::domain::{BookingId, ClientId, EngineerId, RoomId, SeriesId, Status};
use studioflow::store::{BookingEdit, BookingQuery, Busy, BusyPeople, CancelScope, Pool, Store, StoreError};

/// SplitMix64: the same bookings and queries on every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }

    fn pick<'a>(&mut self, of: &[&'a str]) -> &'a str {
        of[self.below(of.len() as u64) as usize]
    }
}

const ROOMS: [&str; 3] = ["live", "booth", "hall"];
const CLIENTS: [&str; 3] = ["c1", "c2", "c3"];

/// Books what fits of `tries` random sessions over September 2026 (refusals are skipped), some
/// with an engineer, some tentative; returns the ids booked.
fn book(store: &mut Store, rng: &mut Rng, tries: usize) -> Vec<BookingId> {
    let mut booked = Vec::new();
    for _ in 0..tries {
        let day = 2 + rng.below(27);
        let start = format!("2026-09-{day:02}T{:02}:{:02}", 8 + rng.below(12), [0, 15, 30, 45][rng.below(4) as usize]);
        let mut new = session(rng.pick(&ROOMS), rng.pick(&CLIENTS), &start, [30, 60, 90, 180, 300, 600][rng.below(6) as usize]);
        new.engineer = [None, Some("e1"), Some("e2")][rng.below(3) as usize].map(EngineerId::new);
        if rng.below(4) == 0 {
            new.status = Status::Tentative;
        }
        if let Ok(b) = store.write_with(|w| w.create_booking(&new)) {
            booked.push(b.id);
        }
    }
    booked
}

/// A random query of the kinds an agent asks: a time range or none, one room, client, engineer or
/// series or none, some statuses or all, a small or large page.
fn query(rng: &mut Rng, series: &[SeriesId]) -> BookingQuery {
    let time = |rng: &mut Rng| at(&format!("2026-09-{:02}T{:02}:00", 1 + rng.below(30), rng.below(24)));
    let mut q = BookingQuery { limit: [1, 3, 20, 1000][rng.below(4) as usize], ..Default::default() };
    if rng.below(3) > 0 {
        q.from = Some(time(rng));
    }
    if rng.below(3) > 0 {
        q.to = Some(q.from.unwrap_or_else(|| at("2026-09-01T00:00")) + Duration::hours(rng.below(24 * 8) as i64));
    }
    match rng.below(6) {
        0 => q.room = Some(RoomId::new(rng.pick(&["live", "booth", "hall", "nowhere"]))),
        1 => q.client = Some(ClientId::new(rng.pick(&CLIENTS))),
        2 => q.engineer = Some(EngineerId::new(rng.pick(&["e1", "e2"]))),
        3 if !series.is_empty() => q.series = Some(series[rng.below(series.len() as u64) as usize].clone()),
        4 => {
            q.room = Some(RoomId::new(rng.pick(&ROOMS)));
            q.client = Some(ClientId::new(rng.pick(&CLIENTS)));
        }
        _ => {}
    }
    q.statuses = match rng.below(3) {
        0 => Some(vec![Status::Confirmed]),
        1 => Some(vec![Status::Tentative, Status::Cancelled]),
        _ => None,
    };
    q
}

/// Every query (and every page of it) and every busy read answers alike from the pool, which
/// keeps the bookings in memory, and from `table`, which reads them from the database.
fn answer_alike(pool: &Pool, table: &Store, rng: &mut Rng, series: &[SeriesId], when: &str) {
    let memory = |q: &BookingQuery| pool.with(|store| store.query_bookings(q).unwrap()).unwrap();
    for _ in 0..150 {
        let mut q = query(rng, series);
        // Page through: each page resumes after the last of the one before.
        for _ in 0..4 {
            let (kept, read) = (memory(&q), table.query_bookings(&q).unwrap());
            assert_eq!(kept, read, "{when}: {q:?}");
            let Some((_, last)) = read.last() else { break };
            q.after = Some(*last);
        }
    }
    let rooms = table.rooms().unwrap();
    for _ in 0..60 {
        let from = at(&format!("2026-09-{:02}T{:02}:00", 1 + rng.below(30), rng.below(24)));
        let to = from + Duration::hours(1 + rng.below(24 * 7) as i64);
        let (client, engineer) = (ClientId::new(rng.pick(&CLIENTS)), EngineerId::new(rng.pick(&["e1", "e2"])));
        let people = match rng.below(3) {
            0 => BusyPeople::default(),
            1 => BusyPeople { client: Some(&client), engineer: None },
            _ => BusyPeople { client: Some(&client), engineer: Some(&engineer) },
        };
        let room = RoomId::new(rng.pick(&ROOMS));
        // The reads promise no order (SQLite reads one room's and a person's by two indexes).
        let sorted = |mut busy: Vec<Busy>| {
            busy.sort_by_key(|b| (b.start, b.end, b.room, b.person));
            busy
        };
        let kept = pool
            .with(|s| (sorted(s.busy_between(&rooms, people, from, to).unwrap()), sorted(s.busy_in_room(&rooms, &room, people, from, to).unwrap())))
            .unwrap();
        let read = (sorted(table.busy_between(&rooms, people, from, to).unwrap()), sorted(table.busy_in_room(&rooms, &room, people, from, to).unwrap()));
        assert_eq!(kept, read, "{when}: busy over {from}..{to} of {people:?} in {room}");
    }
}

on_both! {
    fn the_bookings_kept_in_memory_answer_as_the_table_does(db) {
        let mut table = small_studio(db);
        let mut rng = Rng(11);
        let mut booked = book(&mut table, &mut rng, 300);
        let (series, _) = table.write_with(|w| w.create_series(None, "FREQ=WEEKLY;COUNT=4", &session("hall", "c2", "2026-09-03T07:00", 45))).unwrap();
        let series = vec![series.id];
        assert!(booked.len() > 60, "{} booked", booked.len());
        let pool = Pool::open(db, 2).unwrap();
        answer_alike(&pool, &table, &mut rng, &series, "at the first read");
        let count = table.booking_count().unwrap() as usize;
        assert_eq!(pool.with(|s| s.bookings_in_memory()).unwrap(), Some(count), "the pool's stores keep every booking");
        assert_eq!(table.bookings_in_memory(), None, "a store of its own reads the table");

        // Changes through another connection: the pool's stores read them at their next query.
        booked.extend(book(&mut table, &mut rng, 100));
        for id in booked.iter().step_by(7) {
            table.write_with(|w| w.cancel_booking(id, CancelScope::Occurrence)).unwrap();
        }
        for id in booked.iter().skip(3).step_by(11) {
            let edit = BookingEdit { status: Some(Status::Tentative), notes: Some(Some("moved \"later\"".into())), ..Default::default() };
            let _ = table.write_with(|w| w.update_booking(id, &edit, CancelScope::Occurrence));
            let _ = table.write_with(|w| w.move_booking(id, &RoomId::new("hall"), at("2026-09-29T20:00")));
        }
        table.write_with(|w| w.add_offline_window(&RoomId::new("live"), at("2026-09-10T00:00"), at("2026-09-13T00:00"), "flood")).unwrap();
        answer_alike(&pool, &table, &mut rng, &series, "after changes");

        // A deletion by hand, which the store never makes: it is forgotten too.
        let gone = &booked[1];
        table.write_with(|w| w.conn().execute_batch(&format!("DELETE FROM bookings WHERE id = '{gone}'")).map_err(Into::into)).unwrap();
        let all = BookingQuery { limit: 100_000, ..Default::default() };
        let kept = pool.with(|s| s.query_bookings(&all).unwrap()).unwrap();
        assert!(!kept.iter().any(|(b, _)| &b.id == gone), "{gone} was deleted");
        assert_eq!(kept, table.query_bookings(&all).unwrap());
        answer_alike(&pool, &table, &mut rng, &series, "after a deletion");
        assert_eq!(pool.with(|s| s.bookings_in_memory()).unwrap(), Some(table.booking_count().unwrap() as usize));
    }
}

on_both! {
    /// On SQLite a request reads in a snapshot taken as its connection was handed out. One that
    /// began before a change (its clock behind) while another request brought the memory past
    /// it is answered from the newer memory, which is never emptied or taken back for it.
    fn a_read_that_began_before_a_change_is_answered_from_the_newer_memory(db) {
        let mut table = small_studio(db);
        table.write_with(|w| w.create_booking(&session("live", "c1", "2026-09-07T12:00", 60))).unwrap();
        let pool = Pool::open(db, 2).unwrap();
        let all = BookingQuery { limit: 1000, ..Default::default() };
        pool.with(|older| {
            assert_eq!(older.query_bookings(&all).unwrap().len(), 1);
            let later = table.write_with(|w| w.create_booking(&session("hall", "c2", "2026-09-08T12:00", 60))).unwrap();
            // Another connection of the pool reads the change into memory.
            let seen = pool.with(|newer| newer.query_bookings(&all).unwrap()).unwrap();
            assert_eq!(seen.len(), 2);
            // The request that began first reads on, in its own snapshot.
            let read = older.query_bookings(&all).unwrap();
            assert!(read.iter().any(|(b, _)| b.id == later.id), "the newer memory answers: {read:?}");
            assert_eq!(older.bookings_in_memory(), Some(2));
        })
        .unwrap();
        assert_eq!(pool.with(|s| s.query_bookings(&all).unwrap()).unwrap(), table.query_bookings(&all).unwrap());
    }

    /// A room whose row cannot be read (hours written by hand that are not hours) fails only the
    /// reads that need every room: a query that names a room, that one or another, is checked and
    /// answered, and a room that does not exist is still refused.
    fn a_room_that_cannot_be_read_fails_only_the_reads_that_need_every_room(db) {
        let mut table = small_studio(db);
        table.write_with(|w| w.create_booking(&session("hall", "c1", "2026-09-07T12:00", 60))).unwrap();
        let pool = Pool::open(db, 2).unwrap();
        let sql = r#"UPDATE rooms SET hours = '["not hours"]' WHERE id = 'live'"#;
        table.write_with(|w| w.conn().execute_batch(sql).map_err(Into::into)).unwrap();
        let read = |room: &str| {
            let query = BookingQuery { room: Some(RoomId::new(room)), limit: 10, ..Default::default() };
            pool.with(|s| {
                s.require_known(query.room.as_ref(), None, None)?;
                s.query_bookings(&query).map(|page| page.len())
            })
            .unwrap()
        };
        assert_eq!(read("hall").unwrap(), 1);
        assert_eq!(read("live").unwrap(), 0);
        assert!(matches!(read("nowhere"), Err(StoreError::UnknownRoom(_))));
        assert!(matches!(pool.with(|s| s.rooms()).unwrap(), Err(StoreError::Corrupt(_))));
    }

    /// A booking whose row cannot be read (text that is not a list where a list belongs, written
    /// by hand) is not held: until it is mended, every read goes to the table, which answers as
    /// it did before there was any memory, and fails only where that booking is asked for.
    fn a_booking_that_cannot_be_read_sends_reads_to_the_table_until_it_is_mended(db) {
        let mut table = small_studio(db);
        let broken = table.write_with(|w| w.create_booking(&session("live", "c1", "2026-09-07T12:00", 60))).unwrap();
        let other = table.write_with(|w| w.create_booking(&session("hall", "c2", "2026-09-20T12:00", 60))).unwrap();
        let pool = Pool::open(db, 2).unwrap();
        let all = BookingQuery { limit: 1000, ..Default::default() };
        assert_eq!(pool.with(|s| s.query_bookings(&all).unwrap().len()).unwrap(), 2);
        let set = |table: &mut Store, requires: &str| {
            let sql = format!("UPDATE bookings SET requires = '{requires}' WHERE id = '{}'", broken.id);
            table.write_with(|w| w.conn().execute_batch(&sql).map_err(Into::into)).unwrap();
        };
        set(&mut table, "not a list");
        let later = BookingQuery { from: Some(at("2026-09-15T00:00")), limit: 1000, ..Default::default() };
        let kept = pool.with(|s| (s.query_bookings(&later).map_err(|e| e.to_string()), s.query_bookings(&all).map_err(|e| e.to_string()))).unwrap();
        let read = (table.query_bookings(&later).map_err(|e| e.to_string()), table.query_bookings(&all).map_err(|e| e.to_string()));
        assert_eq!(kept, read);
        assert_eq!(kept.0.unwrap().iter().map(|(b, _)| b.id.clone()).collect::<Vec<_>>(), vec![other.id.clone()]);
        assert!(kept.1.is_err(), "the table's error where the broken booking is read");
        assert_eq!(pool.with(|s| s.bookings_in_memory()).unwrap(), Some(1));
        set(&mut table, "[]");
        let mended = pool.with(|s| s.query_bookings(&all).unwrap()).unwrap();
        assert_eq!(mended, table.query_bookings(&all).unwrap());
        assert_eq!(pool.with(|s| s.bookings_in_memory()).unwrap(), Some(2));
    }
}
