//! Turns an instance into the solver's working problem: the affected bookings, and for each one
//! every placement (room, start and engineer) that rules 1-3, 7 and 8 allow and that no fixed booking
//! blocks (rules 4-5 against fixed bookings never change, so they are filtered here once). A booking left with no candidate keeps
//! the first rule that stopped it, for its unresolved reason. Nothing here chooses between candidates.
//!
//! In a large chain a booking may go to hundreds of rooms at each start; keeping them all would
//! make the month's size bookings times rooms. So each booking keeps at most a cap of its cheapest
//! placements (rooms of equal cost in an order that differs per booking, so that bookings do not
//! all crowd into the first rooms), and records the least cost of any placement it dropped
//! ([`Affected::floor`]): lower bounds count a dropped placement at that cost, so they stay valid.
//!
//! Version 2 multiplies placements by engineers. Other engineers cost the same, so at a room and
//! start a booking keeps only as many as there are bookings that could hold one then (exact: see
//! [`Generator::handovers`]). A capped booking that may change engineer also keeps a second list
//! that reaches over its starts with a few engineers each, so that it still has somewhere to go
//! when the engineers of its cheapest placements are taken.

use std::collections::HashMap;
use std::ops::Range;

use rayon::prelude::*;

use crate::instance::{DAY, Instance, Minute, Room, Weights};

/// Other engineers kept per room and start for a booking whose placements are capped.
const ENGINEERS_PER_PLACE: usize = 2;

/// Something a placement occupies: rule 4 for rooms, rule 5 for people.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Resource {
    Room(u32),
    Client(u32),
    Engineer(u32),
}

/// One allowed placement of one affected booking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Candidate {
    /// Index into [`Problem::affected`].
    pub affected: u32,
    /// Index into the instance's rooms.
    pub room: u32,
    /// The engineer who runs it (index into [`Problem::engineers`]), `None` when the booking has none.
    pub engineer: Option<u32>,
    pub start: Minute,
    pub end: Minute,
    /// Shift, room-change and engineer-change cost of this placement alone (series splits are
    /// counted per part).
    pub cost: i64,
}

/// Why an affected booking has no candidate at all: the first rule that removed the last one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Blocked {
    /// Rule 6.
    Pinned,
    /// Rule 2: no room is big enough and has every required feature.
    NoCompatibleRoom,
    /// Rules 3-4: no compatible room is free at any allowed start; why, room by room (indices).
    RoomsUnavailable(Vec<(u32, RoomState)>),
    /// Rules 5 and 8: at every start where a room is free, the client or every engineer who may run
    /// it is at a fixed booking, away or off work. The flags say which of them alone is stopped at all
    /// such starts (`engineer`: every engineer allowed by rule 7).
    PeopleBusy { client: bool, engineer: bool },
}

/// Why a compatible room takes an affected booking at none of its allowed starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum RoomState {
    /// Offline at every allowed start where it is open (rule 3).
    Offline,
    /// Open at no allowed start (rule 3).
    Closed,
    /// Taken by fixed bookings at every allowed start where it is open and online (rule 4).
    Busy,
}

/// An affected booking, with its candidates or the reason it has none.
#[derive(Debug, Clone)]
pub(crate) struct Affected {
    /// Index into the instance's bookings.
    pub booking: usize,
    /// Its original start.
    pub start: Minute,
    pub client: u32,
    pub engineer: Option<u32>,
    /// Index of its series among the series that matter (two or more affected bookings with candidates).
    pub series: Option<u32>,
    /// Its candidates in [`Problem::candidates`], cheapest first.
    pub candidates: Range<usize>,
    /// How many candidates it had before pruning: how constrained it is, for the greedy's order.
    pub options: usize,
    /// When the cap dropped some of its placements: no dropped placement costs less than this.
    /// `None` when every placement rules 1-5 allow against fixed bookings is a candidate.
    pub floor: Option<i64>,
    pub blocked: Option<Blocked>,
}

/// The working problem, owned so that it can be shared with worker threads.
#[derive(Debug, Clone)]
pub(crate) struct Problem {
    pub weights: Weights,
    /// The engineers' ids, by the index candidates use.
    pub engineers: Vec<String>,
    pub buffer: Minute,
    /// In instance order.
    pub affected: Vec<Affected>,
    pub candidates: Vec<Candidate>,
    pub series_count: usize,
}

impl Problem {
    /// Builds the candidates of every affected booking, cheapest first, each keeping at most
    /// `budget` divided by the affected bookings, and at least `cap`. Assumes `instance.check()`
    /// passed; a booking in an unknown room is treated as unaffected.
    pub fn build(instance: &Instance, cap: usize, budget: usize) -> Problem {
        let room_index: HashMap<&str, u32> =
            instance.rooms.iter().enumerate().map(|(i, r)| (r.id.as_str(), i as u32)).collect();
        let mut clients = Interner::default();
        let mut engineers = Interner::default();
        // The listed engineers first, so that their index is their place in `instance.engineers`.
        for g in &instance.engineers {
            engineers.get(&g.id);
        }
        let listed = instance.engineers.len();
        let mut fixed: HashMap<Resource, Timeline> = HashMap::new();
        let mut affected = Vec::new();
        for (index, b) in instance.bookings.iter().enumerate() {
            let Some(&room) = room_index.get(b.room.as_str()) else { continue };
            let client = clients.get(&b.client);
            let engineer = b.engineer.as_deref().map(|e| engineers.get(e));
            let off_work = engineer.is_some_and(|e| (e as usize) < listed && !instance.engineers[e as usize].works_all_of(b.start, b.end));
            if off_work || instance.rooms[room as usize].is_offline_during(b.start, b.end) {
                affected.push(Affected {
                    booking: index,
                    start: b.start,
                    client,
                    engineer,
                    series: None,
                    candidates: 0..0,
                    options: 0,
                    floor: None,
                    blocked: None,
                });
                continue;
            }
            let mut occupy = |r| fixed.entry(r).or_default().push(b.start, b.end);
            occupy(Resource::Room(room));
            occupy(Resource::Client(client));
            if let Some(e) = engineer {
                occupy(Resource::Engineer(e));
            }
        }
        fixed.values_mut().for_each(Timeline::sort);
        let open: Vec<Vec<[Minute; 2]>> = instance
            .rooms
            .iter()
            .map(|r| {
                let mut open = r.open.clone();
                open.sort_unstable();
                open
            })
            .collect();

        // Bookings with the same needs share their list of compatible rooms (rule 2), so that the
        // rooms are scanned once per kind of need, not once per booking.
        let mut needs: HashMap<(u32, &[String]), u32> = HashMap::new();
        let mut lists: Vec<Vec<u32>> = Vec::new();
        let mut list_of = Vec::with_capacity(affected.len());
        for a in &affected {
            let b = &instance.bookings[a.booking];
            let list = *needs.entry((b.party_size, b.requires.as_slice())).or_insert_with(|| {
                lists.push((0..instance.rooms.len() as u32).filter(|&r| fits(&instance.rooms[r as usize], b.party_size, &b.requires)).collect());
                lists.len() as u32 - 1
            });
            list_of.push(list);
        }
        // Likewise the engineers who may take over a booking (rule 7), per set of skills: the listed
        // engineers with every skill, in index order. A booking without an engineer keeps none.
        let mut skill_sets: HashMap<&[String], u32> = HashMap::new();
        let mut crews: Vec<Vec<u32>> = Vec::new();
        let mut crew_of = Vec::with_capacity(affected.len());
        for a in &affected {
            let b = &instance.bookings[a.booking];
            if a.engineer.is_none() || listed == 0 {
                crew_of.push(None);
                continue;
            }
            let crew = *skill_sets.entry(b.engineer_skills.as_slice()).or_insert_with(|| {
                crews.push((0..listed as u32).filter(|&g| instance.engineers[g as usize].has_skills(&b.engineer_skills)).collect());
                crews.len() as u32 - 1
            });
            crew_of.push(Some(crew));
        }
        // The time each affected booking with an engineer could take one: its window of starts
        // on its day, to its end.
        let day_window = |b: &crate::instance::Booking| {
            let day = b.day();
            let from = (b.start - instance.max_shift_minutes).max(day * DAY);
            let to = (b.start + instance.max_shift_minutes).min(day * DAY + DAY - 1) + (b.end - b.start);
            (from, to)
        };
        let windows: Vec<(Minute, Minute)> = affected
            .iter()
            .map(|a| &instance.bookings[a.booking])
            .filter(|b| b.engineer.is_some() && b.movable)
            .map(day_window)
            .collect();
        let mut window_starts: Vec<Minute> = windows.iter().map(|w| w.0).collect();
        let mut window_ends: Vec<Minute> = windows.iter().map(|w| w.1).collect();
        window_starts.sort_unstable();
        window_ends.sort_unstable();
        let generator = Generator {
            instance,
            fixed: &fixed,
            open: &open,
            room_index: &room_index,
            lists: &lists,
            list_of: &list_of,
            crews: &crews,
            crew_of: &crew_of,
            window_starts: &window_starts,
            window_ends: &window_ends,
        };
        // Bookings are independent here, so they are generated in parallel (on the caller's
        // rayon pool) and concatenated in instance order.
        let cap = cap.max(budget / affected.len().max(1)).max(1);
        let generated: Vec<(Vec<Candidate>, Option<i64>, Option<Blocked>)> = affected
            .par_iter()
            .enumerate()
            .map(|(i, a)| {
                let mut own = Vec::new();
                let floor = generator.cheapest(i as u32, a, cap, None, &mut own);
                if floor.is_some() && generator.crew_of[i].is_some() {
                    // Capped among interchangeable engineers, its list holds its few cheapest
                    // rooms and starts, each with every engineer free then, and nowhere else to go
                    // when those engineers are taken. Half as many again, with a few engineers
                    // per room and start and a share per level of cost, reach over the day. The
                    // floor stays: every placement left out of both costs at least that much.
                    let mut spread = Vec::new();
                    generator.cheapest(i as u32, a, cap / 2, Some(ENGINEERS_PER_PLACE), &mut spread);
                    let listed: std::collections::HashSet<(u32, Minute, Option<u32>)> = own.iter().map(|c| (c.room, c.start, c.engineer)).collect();
                    own.extend(spread.into_iter().filter(|c| !listed.contains(&(c.room, c.start, c.engineer))));
                }
                let blocked = if own.is_empty() { generator.candidates(i as u32, a, &mut own) } else { None };
                // Cheapest first; among equal costs the generation order (rooms rotated per booking).
                own.sort_by_key(|c| c.cost);
                (own, floor, blocked)
            })
            .collect();
        let mut candidates = Vec::with_capacity(generated.iter().map(|(c, _, _)| c.len()).sum());
        for (a, (own, floor, blocked)) in affected.iter_mut().zip(generated) {
            a.blocked = blocked;
            a.floor = floor;
            a.candidates = candidates.len()..candidates.len() + own.len();
            a.options = own.len();
            candidates.extend(own);
        }

        // Only series with two or more placeable occurrences can split.
        let mut series_members: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, a) in affected.iter().enumerate() {
            if let Some(s) = &instance.bookings[a.booking].series
                && !a.candidates.is_empty()
            {
                series_members.entry(s.as_str()).or_default().push(i);
            }
        }
        let mut series: Vec<Vec<usize>> = series_members.into_values().filter(|m| m.len() > 1).collect();
        series.sort_unstable();
        for (s, members) in series.iter().enumerate() {
            for &i in members {
                affected[i].series = Some(s as u32);
            }
        }

        Problem {
            weights: instance.weights,
            engineers: engineers.into_names(),
            buffer: instance.buffer_minutes,
            affected,
            candidates,
            series_count: series.len(),
        }
    }

    /// The resources a candidate occupies, with the interval it occupies each one for:
    /// a room is held for the buffer after the booking too, which makes rule 4 a plain overlap.
    pub fn occupies(&self, c: &Candidate) -> impl Iterator<Item = (Resource, Minute, Minute)> + use<> {
        let a = &self.affected[c.affected as usize];
        let room = (Resource::Room(c.room), c.start, c.end + self.buffer);
        let client = (Resource::Client(a.client), c.start, c.end);
        let engineer = c.engineer.map(|e| (Resource::Engineer(e), c.start, c.end));
        [Some(room), Some(client), engineer].into_iter().flatten()
    }

    /// Whether two candidates cannot both be placed (rules 4 and 5).
    pub fn clash(&self, a: &Candidate, b: &Candidate) -> bool {
        self.occupies(a).any(|(r, s, e)| self.occupies(b).any(|(q, t, f)| r == q && s < f && t < e))
    }

    /// Keeps the candidates whose `keep` is true, in order.
    pub fn retain(&mut self, keep: &[bool]) {
        let mut kept = Vec::with_capacity(keep.iter().filter(|&&k| k).count());
        for a in &mut self.affected {
            let start = kept.len();
            kept.extend(a.candidates.clone().filter(|&c| keep[c]).map(|c| self.candidates[c]));
            a.candidates = start..kept.len();
        }
        self.candidates = kept;
    }

    /// Whether every booking of `affected` kept all its placements (no cap dropped any), so that
    /// a bound proven over the candidates holds for the instance.
    pub fn is_complete(&self, affected: &[u32]) -> bool {
        affected.iter().all(|&a| self.affected[a as usize].floor.is_none())
    }

    /// The candidate indices of an affected booking.
    pub fn candidates_of(&self, affected: u32) -> Range<usize> {
        self.affected[affected as usize].candidates.clone()
    }
}

/// Intervals a resource is held by fixed bookings, sorted by start, for overlap queries.
#[derive(Debug, Clone, Default)]
struct Timeline {
    intervals: Vec<(Minute, Minute)>,
    longest: Minute,
}

impl Timeline {
    fn push(&mut self, start: Minute, end: Minute) {
        self.intervals.push((start, end));
        self.longest = self.longest.max(end - start);
    }

    fn sort(&mut self) {
        self.intervals.sort_unstable();
    }

    /// Whether some interval `[s, e)` has `s < end + pad` and `start < e + pad`.
    fn clashes(&self, start: Minute, end: Minute, pad: Minute) -> bool {
        // An interval that clashes starts after `start - pad - longest`, since it ends after `start - pad`.
        let lo = self.intervals.partition_point(|&(s, _)| s <= start - pad - self.longest);
        let hi = self.intervals.partition_point(|&(s, _)| s < end + pad);
        self.intervals[lo..hi.max(lo)].iter().any(|&(_, e)| start < e + pad)
    }
}

#[derive(Default)]
struct Interner<'a>(HashMap<&'a str, u32>);

impl<'a> Interner<'a> {
    fn get(&mut self, key: &'a str) -> u32 {
        let next = self.0.len() as u32;
        *self.0.entry(key).or_insert(next)
    }

    /// The keys by index.
    fn into_names(self) -> Vec<String> {
        let mut names = vec![String::new(); self.0.len()];
        for (key, index) in self.0 {
            names[index as usize] = key.to_string();
        }
        names
    }
}

struct Generator<'a> {
    instance: &'a Instance,
    fixed: &'a HashMap<Resource, Timeline>,
    open: &'a [Vec<[Minute; 2]>],
    room_index: &'a HashMap<&'a str, u32>,
    /// The distinct lists of compatible rooms, and which one each affected booking has.
    lists: &'a [Vec<u32>],
    list_of: &'a [u32],
    /// The distinct lists of listed engineers with some set of skills, and which one each affected
    /// booking may hand over to (`None`: it keeps its own engineer, or has none).
    crews: &'a [Vec<u32>],
    crew_of: &'a [Option<u32>],
    /// When the affected bookings that may hold an engineer could run, sorted: their windows'
    /// starts and, apart, their ends (see [`Generator::rivals`]).
    window_starts: &'a [Minute],
    window_ends: &'a [Minute],
}

impl Generator<'_> {
    /// The rooms that fit affected booking `index` (rule 2), in index order.
    fn compatible(&self, index: u32) -> &[u32] {
        &self.lists[self.list_of[index as usize] as usize]
    }

    /// The engineers other than its own who may run affected booking `index` (rule 7), in index order.
    fn others(&self, index: u32, a: &Affected) -> Vec<u32> {
        match self.crew_of[index as usize] {
            Some(crew) => self.crews[crew as usize].iter().copied().filter(|&g| Some(g) != a.engineer).collect(),
            None => Vec::new(),
        }
    }

    /// How many affected bookings with an engineer could hold one at some minute of `[s, e)`,
    /// the booking asking included: one more than the engineers the others can take then.
    fn rivals(&self, s: Minute, e: Minute) -> usize {
        let started = self.window_starts.partition_point(|&w| w < e);
        let ended = self.window_ends.partition_point(|&w| w <= s);
        started.saturating_sub(ended)
    }

    /// The engineers of `crew` who may run a booking at `[s, e)` (rule 8 and fixed bookings), at
    /// most [`Generator::rivals`] of them: in any plan the other bookings hold at most one fewer
    /// of them then, so one kept is always free, and taking it instead costs the same (every
    /// other engineer costs one engineer change). Dropping the rest loses no optimum.
    /// `most` caps them further (then some may be lost: see [`Generator::cheapest`]).
    fn handovers(&self, crew: &[Option<u32>], s: Minute, e: Minute, most: usize) -> Vec<Option<u32>> {
        let keep = self.rivals(s, e).max(1).min(most);
        crew.iter().copied().filter(|&g| self.engineer_free(g, s, e)).take(keep).collect()
    }

    /// Whether engineer `g` (or no engineer) may run `[s, e)`: rule 8, and rule 5 against fixed bookings.
    fn engineer_free(&self, g: Option<u32>, s: Minute, e: Minute) -> bool {
        let Some(g) = g else { return true };
        self.instance.engineers.get(g as usize).is_none_or(|info| info.can_take(s, e))
            && self.fixed.get(&Resource::Engineer(g)).is_none_or(|t| !t.clashes(s, e, 0))
    }

    /// Pushes the cheapest placements of one affected booking, at most `cap`, in order of cost,
    /// and returns the least cost a placement it did not look at could have (`None` when it looked
    /// at them all). Among rooms of equal cost the order starts at a room that depends on the
    /// booking, so that a cap spreads the bookings over the rooms.
    ///
    /// With `per_place`, each room and start keeps at most that many other engineers (turned per
    /// start), and each level of cost in other rooms at most its share of the cap; the least cost
    /// of a placement so dropped also bounds the returned floor.
    fn cheapest(&self, index: u32, a: &Affected, cap: usize, per_place: Option<usize>, out: &mut Vec<Candidate>) -> Option<i64> {
        let inst = self.instance;
        let b = &inst.bookings[a.booking];
        if !b.movable {
            return None;
        }
        let own_room = self.room_index.get(b.room.as_str()).copied();
        let compatible = self.compatible(index);
        // The other rooms, turned to start at a place that depends on the booking; built lazily,
        // so that a booking that reaches its cap early never walks all the rooms of a big chain.
        // `compatible` is in index order, so the booking's own room is found by bisection.
        let own_at = own_room.and_then(|r| compatible.binary_search(&r).ok());
        let count = compatible.len() - usize::from(own_at.is_some());
        // A series' occurrences turn alike, so that a cap keeps rooms they have in common.
        let key = match &b.series {
            Some(series) => series.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, byte| (h ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3)),
            None => (a.booking as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
        };
        let turn = if count == 0 { 0 } else { (key >> 17) as usize % count };
        let other_at = |i: usize| compatible[if own_at.is_some_and(|p| i >= p) { i + 1 } else { i }];
        let others = || (0..count).map(move |j| other_at((turn + j) % count));
        let own: Vec<u32> = own_at.map(|p| compatible[p]).into_iter().collect();
        let w = &inst.weights;
        let steps = inst.max_shift_minutes / inst.grid_minutes;
        // Other engineers (rule 7), turned like the rooms so that a cap spreads bookings over them.
        let mut crew = self.others(index, a);
        if !crew.is_empty() {
            let turn = (key >> 29) as usize % crew.len();
            crew.rotate_left(turn);
        }
        // Levels of equal cost: (cost, shift steps, whether in another room, whether by another engineer).
        let mut levels: Vec<(i64, i64, bool, bool)> = (0..=steps)
            .flat_map(|k| {
                let base = [(w.shift_step * k, k, false, false), (w.shift_step * k + w.room_change, k, true, false)];
                let handed = [(w.shift_step * k + w.engineer_change, k, false, true), (w.shift_step * k + w.room_change + w.engineer_change, k, true, true)];
                base.into_iter().chain(handed.into_iter().filter(|_| !crew.is_empty()))
            })
            .collect();
        levels.sort_unstable();
        let duration = b.end - b.start;
        let timeline = |r: Resource| self.fixed.get(&r);
        let busy = |t: Option<&Timeline>, s, e, pad| t.is_some_and(|t| t.clashes(s, e, pad));
        let client_timeline = timeline(Resource::Client(a.client));
        let own_engineer = [a.engineer];
        let crew: Vec<Option<u32>> = crew.into_iter().map(Some).collect();
        // The least cost of a placement `per_place` dropped.
        let mut thinned: Option<i64> = None;
        // The engineers who may take it over at each start, found once per start (with
        // `per_place`, a few more than a room and start keeps, to turn among).
        let mut handovers: HashMap<Minute, Vec<Option<u32>>> = HashMap::new();
        let most = per_place.map_or(usize::MAX, |limit| 4 * limit);
        let per_level = per_place.map(|_| (cap / levels.iter().filter(|l| l.2).count().max(1)).max(8));
        for &(cost, k, other, handed) in &levels {
            let mut kept = 0;
            let starts: Vec<Minute> = if k == 0 { vec![b.start] } else { vec![b.start - k * inst.grid_minutes, b.start + k * inst.grid_minutes] };
            let engineers: &[Option<u32>] = if handed { &crew } else { &own_engineer };
            // Each start with the engineers of this level who may run it there.
            let free: Vec<(Minute, Vec<Option<u32>>)> = starts
                .into_iter()
                .filter(|s| s.div_euclid(DAY) == b.day() && !busy(client_timeline, *s, s + duration, 0))
                .map(|s| {
                    let gs = if handed {
                        handovers.entry(s).or_insert_with(|| self.handovers(engineers, s, s + duration, most)).clone()
                    } else {
                        engineers.iter().copied().filter(|&g| self.engineer_free(g, s, s + duration)).collect::<Vec<_>>()
                    };
                    (s, gs)
                })
                .filter(|(_, gs)| !gs.is_empty())
                .collect();
            if free.is_empty() {
                continue;
            }
            let rooms: Box<dyn Iterator<Item = u32> + '_> = if other { Box::new(others()) } else { Box::new(own.iter().copied()) };
            'rooms: for r in rooms {
                let room = &inst.rooms[r as usize];
                let room_timeline = timeline(Resource::Room(r));
                for (s, gs) in &free {
                    let (s, e) = (*s, s + duration);
                    if is_open(&self.open[r as usize], s, e)
                        && !room.is_offline_during(s, e)
                        && !busy(room_timeline, s, e, inst.buffer_minutes)
                    {
                        let gs = match per_place {
                            Some(limit) if handed && gs.len() > limit => {
                                thinned.get_or_insert(cost);
                                // Turned per start, so that the engineers kept differ over the day.
                                let turn = (s.div_euclid(inst.grid_minutes.max(1)) as usize) % gs.len();
                                (0..limit).map(|j| gs[(turn + j) % gs.len()]).collect()
                            }
                            _ => gs.clone(),
                        };
                        for g in gs {
                            if out.len() == cap {
                                // Everything not looked at is at this level or a later, dearer one.
                                return Some(thinned.map_or(cost, |t| t.min(cost)));
                            }
                            if per_level.is_some_and(|limit| kept == limit) {
                                thinned.get_or_insert(cost);
                                break 'rooms;
                            }
                            out.push(Candidate { affected: index, room: r, engineer: g, start: s, end: e, cost });
                            kept += 1;
                        }
                    }
                }
            }
        }
        thinned
    }

    /// Pushes the candidates of one affected booking, or returns why it has none.
    fn candidates(&self, index: u32, a: &Affected, out: &mut Vec<Candidate>) -> Option<Blocked> {
        let inst = self.instance;
        let b = &inst.bookings[a.booking];
        if !b.movable {
            return Some(Blocked::Pinned);
        }
        let own_room = self.room_index.get(b.room.as_str()).copied();
        let compatible = self.compatible(index);
        if compatible.is_empty() {
            return Some(Blocked::NoCompatibleRoom);
        }
        let steps = inst.max_shift_minutes / inst.grid_minutes;
        let starts: Vec<(i64, Minute)> = (-steps..=steps)
            .map(|k| (k, b.start + k * inst.grid_minutes))
            .filter(|&(_, s)| s.div_euclid(DAY) == b.day())
            .collect();
        let duration = b.end - b.start;
        // Look each timeline up once, not once per start.
        let timeline = |r: Resource| self.fixed.get(&r);
        let busy = |t: Option<&Timeline>, s, e, pad| t.is_some_and(|t| t.clashes(s, e, pad));
        let client_timeline = timeline(Resource::Client(a.client));
        let others: Vec<Option<u32>> = self.others(index, a).into_iter().map(Some).collect();
        let own_room_cost = |r: u32| inst.weights.room_change * i64::from(own_room != Some(r));
        // Who may run it at each start does not depend on the room: found once per start.
        let free_at: Vec<Vec<Option<u32>>> = starts
            .iter()
            .map(|&(_, s)| {
                let own = Some(a.engineer).filter(|&g| self.engineer_free(g, s, s + duration));
                own.into_iter().chain(self.handovers(&others, s, s + duration, usize::MAX)).collect()
            })
            .collect();
        let mut states = Vec::with_capacity(compatible.len());
        let (mut client_free_somewhere, mut engineer_free_somewhere) = (false, false);
        let before = out.len();
        for &r in compatible {
            let room = &inst.rooms[r as usize];
            let room_timeline = timeline(Resource::Room(r));
            // How far this room got through rules 3 and 4 at its best start, for the reason:
            // 0 closed, 1 open but offline, 2 online but taken, 3 free.
            let mut reached = 0u8;
            for (&(k, s), free) in starts.iter().zip(&free_at) {
                let e = s + duration;
                if !is_open(&self.open[r as usize], s, e) {
                    continue;
                }
                if room.is_offline_during(s, e) {
                    reached = reached.max(1);
                    continue;
                }
                reached = reached.max(2);
                if busy(room_timeline, s, e, inst.buffer_minutes) {
                    continue;
                }
                reached = 3;
                let client_busy = busy(client_timeline, s, e, 0);
                client_free_somewhere |= !client_busy;
                engineer_free_somewhere |= !free.is_empty();
                if client_busy {
                    continue;
                }
                for &g in free {
                    let handed = inst.weights.engineer_change * i64::from(g != a.engineer);
                    let cost = inst.weights.shift_step * k.abs() + own_room_cost(r) + handed;
                    out.push(Candidate { affected: index, room: r, engineer: g, start: s, end: e, cost });
                }
            }
            states.push((r, reached));
        }
        if out.len() > before {
            None
        } else if states.iter().all(|&(_, reached)| reached < 3) {
            let state = |reached| match reached {
                0 => RoomState::Closed,
                1 => RoomState::Offline,
                _ => RoomState::Busy,
            };
            Some(Blocked::RoomsUnavailable(states.into_iter().map(|(r, reached)| (r, state(reached))).collect()))
        } else {
            Some(Blocked::PeopleBusy { client: !client_free_somewhere, engineer: !engineer_free_somewhere })
        }
    }
}

/// Rule 2.
fn fits(room: &Room, party: u32, requires: &[String]) -> bool {
    room.capacity >= party && requires.iter().all(|f| room.features.contains(f))
}

/// Rule 3's first half: `[s, e)` lies inside one opening interval (sorted by start).
fn is_open(open: &[[Minute; 2]], s: Minute, e: Minute) -> bool {
    let after = open.partition_point(|&[os, _]| os <= s);
    open[..after].iter().rev().any(|&[_, oe]| e <= oe)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeline_clashes_with_padding() {
        let mut t = Timeline::default();
        t.push(600, 660);
        t.push(100, 400);
        t.sort();
        assert!(t.clashes(650, 700, 0));
        assert!(!t.clashes(660, 700, 0), "half-open intervals touch without clashing");
        assert!(t.clashes(660, 700, 15), "a buffer makes touching intervals clash");
        assert!(t.clashes(300, 310, 0), "a long earlier interval is found");
        assert!(!t.clashes(400, 600, 0));
    }

    #[test]
    fn a_booking_keeps_one_interchangeable_engineer_per_rival_and_the_optimum_stays() {
        // Room a offline all day; b and c free. x (in b) has engineer e1, who is away; z (engineer
        // e2) sat in a at the same time. e2..e5 have x's skill and are free. Two bookings can hold
        // an engineer at 600-660, so x keeps two of its four possible engineers per room, and z
        // (own e2, or two others) likewise: x 2 rooms x 2 = 4 candidates, z 2 rooms x (1 + 2) = 6.
        // Optimum by hand: x stays in b with any engineer but e2 (engineer change 10), z goes to c
        // with e2 (room change 1) = 11.
        let inst: crate::Instance = serde_json::from_str(
            r#"{"version": 2, "month": "2026-09", "max_shift_minutes": 0,
                "rooms": [{"id": "a", "capacity": 4, "open": [[0, 1440]], "offline": [[0, 1440]]},
                          {"id": "b", "capacity": 4, "open": [[0, 1440]]},
                          {"id": "c", "capacity": 4, "open": [[0, 1440]]}],
                "engineers": [{"id": "e1", "skills": ["mixing"], "away": [[0, 1440]]},
                              {"id": "e2", "skills": ["mixing"]}, {"id": "e3", "skills": ["mixing"]},
                              {"id": "e4", "skills": ["mixing"]}, {"id": "e5", "skills": ["mixing"]}],
                "bookings": [{"id": "x", "room": "b", "start": 600, "end": 660, "client": "c1", "engineer": "e1", "engineer_skills": ["mixing"]},
                             {"id": "z", "room": "a", "start": 600, "end": 660, "client": "c2", "engineer": "e2", "engineer_skills": ["mixing"]}]}"#,
        )
        .unwrap();
        inst.check().unwrap();
        let problem = Problem::build(&inst, usize::MAX, 0);
        assert_eq!(problem.candidates_of(0).len(), 4, "x: rooms b and c, two engineers each");
        assert_eq!(problem.candidates_of(1).len(), 6, "z: rooms b and c, its own and two others each");
        let report = crate::solve_with_report(&inst, &crate::Options::default());
        assert!(crate::validate(&inst, &report.solution).is_ok());
        assert_eq!((report.solution.cost, report.proven_optimal), (11, true));
    }

    #[test]
    fn open_needs_one_interval() {
        let open = [[0, 100], [100, 200]];
        assert!(is_open(&open, 10, 90));
        assert!(!is_open(&open, 50, 150), "two touching intervals are not one");
    }
}
