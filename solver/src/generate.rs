//! Seeded generators of realistic reflow instances, for tests and benchmarks: rooms of a few kinds
//! with capacities, features and opening hours (some past midnight), clients and engineers shared
//! across rooms, weekly series, pinned bookings and a few hard ones, and rooms going offline.
//! The same seed always gives the same instance. Nothing here solves or judges.
//!
//! The families of version 1 (rooms offline only) are written as version 1 instances. The version 2
//! families ([`studio_away`], [`chain_away`], [`chain_300_away`]) add engineers with skills, working
//! hours and time off ([`Staff`]) on top of the same kind of month.

use crate::instance::{Booking, DAY, Engineer, Instance, Interval, Minute, Room, Weights};

/// A small, fast, seeded PRNG (splitmix64): enough for test data, and no dependency.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator whose whole sequence is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// `true` with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    /// One item of a non-empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Fixes everything else.
    pub seed: u64,
    /// Rooms in the studio or chain.
    pub rooms: usize,
    /// Rooms that go offline.
    pub offline_rooms: usize,
    /// How long each of them is offline, in days.
    pub offline_days: i64,
    /// Days in the month.
    pub days: i64,
    /// Share of opening hours that is booked, roughly.
    pub occupancy: f64,
    /// Share of bookings that belong to weekly series, roughly.
    pub series_share: f64,
    /// Turnaround time between bookings in one room.
    pub buffer_minutes: Minute,
    /// Engineers who run the sessions; `None`: half the rooms plus two.
    pub engineers: Option<usize>,
}

/// Version 2: the engineers' side of a generated month.
#[derive(Debug, Clone, PartialEq)]
pub struct Staff {
    /// How many engineers are away.
    pub away: usize,
    /// For how many days each, from midnight.
    pub away_days: i64,
}

impl Config {
    /// One studio: 6 rooms, one offline for 14 days, half booked (~140 affected bookings).
    pub fn studio(seed: u64) -> Config {
        Config {
            seed,
            rooms: 6,
            offline_rooms: 1,
            offline_days: 14,
            days: 30,
            occupancy: 0.5,
            series_share: 0.35,
            buffer_minutes: 0,
            engineers: None,
        }
    }

    /// A chain: 40 rooms, 4 offline for 21 days.
    pub fn chain(seed: u64) -> Config {
        Config { rooms: 40, offline_rooms: 4, offline_days: 21, ..Config::studio(seed) }
    }

    /// A large chain: 80 rooms, 8 offline for 21 days.
    pub fn large_chain(seed: u64) -> Config {
        Config { rooms: 80, offline_rooms: 8, offline_days: 21, ..Config::studio(seed) }
    }

    /// A chain of `rooms` rooms (mostly rehearsal and recording), `offline_rooms` of them offline
    /// for 21 days: about 110 affected bookings per offline room.
    pub fn big_chain(seed: u64, rooms: usize, offline_rooms: usize) -> Config {
        Config { rooms, offline_rooms, offline_days: 21, ..Config::studio(seed) }
    }

    /// A small, busy week for property tests; the buffer varies with the seed.
    pub fn small(seed: u64) -> Config {
        Config {
            seed,
            rooms: 4,
            offline_rooms: 1,
            offline_days: 3,
            days: 7,
            occupancy: 0.6,
            series_share: 0.35,
            buffer_minutes: [0, 0, 15, 30][(seed % 4) as usize],
            engineers: None,
        }
    }
}

/// [`Config::studio`].
pub fn studio(seed: u64) -> Instance {
    generate(&Config::studio(seed))
}

/// [`Config::chain`].
pub fn chain(seed: u64) -> Instance {
    generate(&Config::chain(seed))
}

/// [`Config::large_chain`].
pub fn large_chain(seed: u64) -> Instance {
    generate(&Config::large_chain(seed))
}

/// [`Config::small`].
pub fn small(seed: u64) -> Instance {
    generate(&Config::small(seed))
}

/// [`Config::big_chain`] with 300 rooms, 27 offline (about 2,800 affected bookings).
pub fn chain_300(seed: u64) -> Instance {
    generate(&Config::big_chain(seed, 300, 27))
}

/// [`Config::big_chain`] with 1,000 rooms, 100 offline (about 10,000 affected bookings).
pub fn chain_1000(seed: u64) -> Instance {
    generate(&Config::big_chain(seed, 1000, 100))
}

/// A loose month: 60 rooms, 9 offline for 21 days, and bookings may move up to six hours either
/// way (about 900 affected bookings, each with hundreds of placements).
pub fn loose(seed: u64) -> Instance {
    let mut instance = generate(&Config { rooms: 60, offline_rooms: 9, ..Config::chain(seed) });
    instance.max_shift_minutes = 360;
    instance
}

/// Version 2: the studio (6 rooms, 5 engineers) with no room offline and one engineer away for a week.
pub fn studio_away(seed: u64) -> Instance {
    generate_with_staff(&Config { offline_rooms: 0, ..Config::studio(seed) }, &Staff { away: 1, away_days: 7 })
}

/// Version 2: the 40-room chain with 30 engineers, 6 of them away for 10 days, and 4 rooms offline
/// for 21 days.
pub fn chain_away(seed: u64) -> Instance {
    generate_with_staff(&Config { engineers: Some(30), ..Config::chain(seed) }, &Staff { away: 6, away_days: 10 })
}

/// Version 2: the 300-room chain ([`chain_300`]: 27 rooms offline for 21 days) with its 152
/// engineers, 15 of them away for 10 days.
pub fn chain_300_away(seed: u64) -> Instance {
    generate_with_staff(&Config::big_chain(seed, 300, 27), &Staff { away: 15, away_days: 10 })
}

/// What engineers can do; a booking needs at most one of them.
const SKILLS: [&str; 5] = ["tracking", "mixing", "podcast", "live-sound", "mastering"];

/// A version 2 instance: the month [`generate`] makes, with every engineer listed (two or three
/// skills; working hours from 08:00, or earlier, to 20:00, or as late as their sessions end, each
/// day; `staff.away` of them away for `staff.away_days` days), and the sessions with engineers
/// needing one skill their own engineer has (the room kind's usual one when they have it).
/// The month's bookings are the same as [`generate`]'s for the same config.
pub fn generate_with_staff(config: &Config, staff: &Staff) -> Instance {
    let mut instance = generate(config);
    let mut rng = SplitMix64::new(config.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x57aff);
    let count = engineer_count(config);
    let mut engineers: Vec<Engineer> = (1..=count)
        .map(|i| {
            let mut skills: Vec<String> = Vec::new();
            let wanted = 2 + rng.below(2) as usize;
            while skills.len() < wanted {
                let skill = rng.pick(&SKILLS).to_string();
                if !skills.contains(&skill) {
                    skills.push(skill);
                }
            }
            skills.sort();
            Engineer { id: engineer_id(i), skills, available: None, away: Vec::new() }
        })
        .collect();
    // Working hours: each day from 08:00 to 20:00, stretched to cover the engineer's own sessions
    // (and the day after the month, where sessions that start past midnight fall).
    let mut hours: Vec<Vec<Interval>> = (0..count).map(|_| (0..=config.days).map(|d| [d * DAY + 8 * 60, d * DAY + 20 * 60]).collect()).collect();
    let index_of = |id: &str| id.strip_prefix("eng-").and_then(|n| n.parse::<usize>().ok()).map(|n| n - 1);
    for b in &instance.bookings {
        let Some(g) = b.engineer.as_deref().and_then(index_of) else { continue };
        let day = b.day();
        if let Some(h) = hours[g].get_mut(day as usize) {
            h[0] = h[0].min(b.start);
            h[1] = h[1].max(b.end);
        }
    }
    // Stretching may make one day's hours reach into the next day's: join them then.
    for (g, h) in engineers.iter_mut().zip(hours) {
        let mut joined: Vec<Interval> = Vec::new();
        for [s, e] in h {
            match joined.last_mut() {
                Some(last) if s <= last[1] => last[1] = last[1].max(e),
                _ => joined.push([s, e]),
            }
        }
        g.available = Some(joined);
    }
    let mut order: Vec<usize> = (0..count).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    for &g in order.iter().take(staff.away) {
        let first = rng.below((config.days - staff.away_days).max(1) as u64) as Minute;
        engineers[g].away.push([first * DAY, (first + staff.away_days) * DAY]);
    }
    for b in &mut instance.bookings {
        let Some(g) = b.engineer.as_deref().and_then(index_of) else { continue };
        let usual = match kind_of_id(&b.room).name {
            "recording" => if rng.chance(0.5) { "tracking" } else { "mixing" },
            "podcast" => "podcast",
            "hall" => "live-sound",
            _ => if rng.chance(0.5) { "live-sound" } else { "tracking" },
        };
        let own = &engineers[g].skills;
        if own.iter().any(|k| k == usual) {
            b.engineer_skills = vec![usual.to_string()];
        } else if rng.chance(0.5) {
            b.engineer_skills = vec![rng.pick(own).clone()];
        }
    }
    instance.version = 2;
    instance.engineers = engineers;
    instance
}

fn engineer_count(config: &Config) -> usize {
    config.engineers.unwrap_or(config.rooms / 2 + 2)
}

fn engineer_id(i: usize) -> String {
    format!("eng-{i:02}")
}

/// A kind of room: what it holds and offers, and its daily hours (the end may pass midnight).
struct Kind {
    name: &'static str,
    capacity: [u32; 2],
    features: &'static [&'static str],
    /// Features some rooms of the kind have.
    extras: &'static [&'static str],
    hours: [Minute; 2],
    durations: &'static [Minute],
}

const KINDS: [Kind; 4] = [
    Kind {
        name: "rehearsal",
        capacity: [4, 8],
        features: &["drums", "amps"],
        extras: &["grand-piano"],
        hours: [9 * 60, 26 * 60],
        durations: &[45, 60, 60, 90, 120],
    },
    Kind {
        name: "recording",
        capacity: [3, 10],
        features: &["control-room", "vocal-booth"],
        extras: &["drums", "grand-piano", "dolby-atmos"],
        hours: [9 * 60, 23 * 60],
        durations: &[60, 90, 120, 180],
    },
    Kind {
        name: "podcast",
        capacity: [2, 4],
        features: &["podcast-kit"],
        extras: &["video"],
        hours: [8 * 60, 22 * 60],
        durations: &[30, 45, 60, 60, 90],
    },
    Kind {
        name: "hall",
        capacity: [16, 30],
        features: &["grand-piano", "control-room", "drums"],
        extras: &["dolby-atmos"],
        hours: [9 * 60, 24 * 60],
        durations: &[120, 180, 240],
    },
];

/// Busy intervals of one resource, for building a consistent month.
#[derive(Default, Clone)]
struct Busy(Vec<(Minute, Minute)>);

impl Busy {
    fn is_free(&self, s: Minute, e: Minute, pad: Minute) -> bool {
        self.0.iter().all(|&(bs, be)| e + pad <= bs || be + pad <= s)
    }
}

/// Generates an instance. Fixed bookings never clash with each other, so every difficulty comes
/// from the offline rooms, as in a real month.
pub fn generate(config: &Config) -> Instance {
    let mut rng = SplitMix64::new(config.seed.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ 0x5eed);
    let rooms = make_rooms(config, &mut rng);
    let kinds: Vec<&Kind> = rooms.iter().map(|r| kind_of(r)).collect();
    let clients: Vec<String> = (1..=config.rooms * 6 + 10).map(|i| format!("client-{i:03}")).collect();
    let engineers: Vec<String> = (1..=engineer_count(config)).map(engineer_id).collect();
    let mut month = Month {
        config,
        rooms: &rooms,
        room_busy: vec![Busy::default(); rooms.len()],
        client_busy: vec![Busy::default(); clients.len()],
        engineer_busy: vec![Busy::default(); engineers.len()],
        bookings: Vec::new(),
        clients: &clients,
        engineers: &engineers,
    };

    // Weekly series first, so that they find their regular slot; then one-off bookings around them.
    let mut series = 0;
    for (r, kind) in kinds.iter().enumerate() {
        // About `series_share` of a room's usual day is regular weekly slots.
        for weekday in (0..7).flat_map(|d| [d; 6]) {
            if !rng.chance(config.series_share) {
                continue;
            }
            series += 1;
            let duration = *rng.pick(kind.durations);
            let latest = (kind.hours[1] - kind.hours[0] - duration).max(0) / 30;
            let offset = kind.hours[0] + 30 * rng.below(latest as u64 + 1) as Minute;
            let client = rng.below(clients.len() as u64) as usize;
            let engineer = rng.chance(0.7).then(|| rng.below(engineers.len() as u64) as usize);
            let template = Template { room: r, duration, client, engineer, series: Some(series) };
            for day in (weekday..config.days).step_by(7) {
                month.try_book(&mut rng, &template, day * DAY + offset);
            }
        }
    }
    for (r, kind) in kinds.iter().enumerate() {
        for day in 0..config.days {
            let [open, close] = kind.hours.map(|h| day * DAY + h);
            let mut t = open;
            loop {
                let duration = *rng.pick(kind.durations);
                let gap_mean = (duration as f64 * (1.0 - config.occupancy) / config.occupancy) as u64;
                t += 15 * (rng.below(2 * gap_mean / 15 + 1) as Minute);
                if t + duration > close {
                    break;
                }
                let client = rng.below(clients.len() as u64) as usize;
                let engineer = rng.chance(0.7).then(|| rng.below(engineers.len() as u64) as usize);
                let template = Template { room: r, duration, client, engineer, series: None };
                if month.try_book(&mut rng, &template, t) {
                    t += duration;
                } else {
                    t += 30;
                }
            }
        }
    }

    let mut bookings = month.bookings;
    bookings.sort_by_key(|b| (b.start, b.room.clone()));
    for (i, b) in bookings.iter_mut().enumerate() {
        b.id = format!("bk_{:05}", i + 1);
    }
    Instance {
        version: 1,
        month: "2026-09".to_string(),
        grid_minutes: 15,
        max_shift_minutes: 120,
        buffer_minutes: config.buffer_minutes,
        weights: Weights::default(),
        rooms,
        bookings,
        engineers: Vec::new(),
    }
}

fn make_rooms(config: &Config, rng: &mut SplitMix64) -> Vec<Room> {
    let mut rooms = Vec::new();
    for i in 0..config.rooms {
        // Mostly rehearsal and recording rooms, some podcast booths, a hall in one of twelve.
        let kind = &KINDS[[0, 1, 0, 2, 1, 3, 0, 1, 2, 0, 1, 1][i % 12]];
        let mut features: Vec<String> = kind.features.iter().map(|f| f.to_string()).collect();
        for extra in kind.extras {
            if rng.chance(0.25) {
                features.push(extra.to_string());
            }
        }
        let capacity = kind.capacity[0] + rng.below((kind.capacity[1] - kind.capacity[0] + 1) as u64) as u32;
        let open = (0..config.days).map(|d| kind.hours.map(|h| d * DAY + h)).collect();
        rooms.push(Room { id: format!("{}-{:02}", kind.name, i + 1), capacity, features, open, offline: Vec::new() });
    }
    // Offline rooms are rehearsal or recording rooms (a studio's only booth going offline would
    // make most of its bookings unplaceable); some go offline at midnight, some at noon.
    let mut order: Vec<usize> = (0..rooms.len()).filter(|&r| rooms[r].id.starts_with("re")).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    for &r in order.iter().take(config.offline_rooms) {
        let first_day = 1 + rng.below((config.days - config.offline_days).max(1) as u64) as Minute;
        let start = first_day * DAY + if rng.chance(0.5) { 0 } else { 12 * 60 };
        rooms[r].offline.push([start, start + config.offline_days * DAY]);
    }
    rooms
}

fn kind_of(room: &Room) -> &'static Kind {
    kind_of_id(&room.id)
}

fn kind_of_id(room: &str) -> &'static Kind {
    KINDS.iter().find(|k| room.starts_with(k.name)).unwrap_or(&KINDS[0])
}

struct Template {
    room: usize,
    duration: Minute,
    client: usize,
    engineer: Option<usize>,
    series: Option<usize>,
}

struct Month<'a> {
    config: &'a Config,
    rooms: &'a [Room],
    room_busy: Vec<Busy>,
    client_busy: Vec<Busy>,
    engineer_busy: Vec<Busy>,
    bookings: Vec<Booking>,
    clients: &'a [String],
    engineers: &'a [String],
}

impl Month<'_> {
    /// Books the template at `start` if room, client and engineer are free; an engineer who is
    /// busy is dropped rather than the booking.
    fn try_book(&mut self, rng: &mut SplitMix64, t: &Template, start: Minute) -> bool {
        let end = start + t.duration;
        if !self.room_busy[t.room].is_free(start, end, self.config.buffer_minutes)
            || !self.client_busy[t.client].is_free(start, end, 0)
        {
            return false;
        }
        let engineer = t.engineer.filter(|&e| self.engineer_busy[e].is_free(start, end, 0));
        self.room_busy[t.room].0.push((start, end));
        self.client_busy[t.client].0.push((start, end));
        if let Some(e) = engineer {
            self.engineer_busy[e].0.push((start, end));
        }
        let room = &self.rooms[t.room];
        // Parties mostly small; one booking in fifty fills the room, one in a hundred needs a rare feature.
        let mut party_size = 1 + rng.below(u64::from(room.capacity.min(6))) as u32;
        let mut requires = Vec::new();
        if rng.chance(0.4) {
            requires.push(rng.pick(&room.features).clone());
        }
        if rng.chance(0.02) {
            party_size = room.capacity;
        }
        if rng.chance(0.01) {
            requires.push("dolby-atmos".to_string());
            requires.dedup();
        }
        self.bookings.push(Booking {
            id: String::new(),
            room: room.id.clone(),
            start,
            end,
            client: self.clients[t.client].clone(),
            engineer: engineer.map(|e| self.engineers[e].clone()),
            party_size,
            requires,
            engineer_skills: Vec::new(),
            series: t.series.map(|s| format!("series-{s:04}")),
            movable: !rng.chance(0.03),
        });
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_instance() {
        assert_eq!(studio(7), studio(7));
        assert_ne!(studio(7), studio(8));
    }

    #[test]
    fn generated_instances_pass_the_check() {
        for seed in 0..5 {
            assert_eq!(small(seed).check(), Ok(()));
            assert_eq!(studio(seed).check(), Ok(()));
            assert_eq!(studio_away(seed).check(), Ok(()));
        }
    }

    #[test]
    fn staff_families_have_engineers_away_and_the_same_bookings() {
        let v1 = generate(&Config { offline_rooms: 0, ..Config::studio(3) });
        let v2 = studio_away(3);
        assert_eq!(v2.version, 2);
        assert_eq!(v2.engineers.len(), 5);
        assert_eq!(v2.engineers.iter().filter(|g| !g.away.is_empty()).count(), 1);
        let strip = |b: &Booking| Booking { engineer_skills: Vec::new(), ..b.clone() };
        assert_eq!(v1.bookings, v2.bookings.iter().map(strip).collect::<Vec<_>>());
        assert!(v2.bookings.iter().any(|b| !b.engineer_skills.is_empty()));
        // No room is offline, so exactly the sessions of the engineer away are affected.
        let affected = v2.bookings.iter().filter(|b| v2.is_affected(b)).count();
        assert!(affected > 0);
        // Working hours cover every session of their engineer.
        for b in &v2.bookings {
            if let Some(g) = v2.engineers.iter().find(|g| Some(&g.id) == b.engineer.as_ref()) {
                assert!(g.works_all_of(b.start, b.end) || g.is_away_during(b.start, b.end), "{}", b.id);
            }
        }
    }
}
