//! Rejects malformed instances before anything is solved: a wrong version, impossible settings,
//! duplicate or dangling ids, empty intervals. It says nothing about whether a reflow is possible;
//! an instance that passes may still leave every booking unresolved.

use std::collections::HashSet;

use thiserror::Error;

use crate::instance::{Instance, Interval, VERSION, VERSIONS};

/// Why an instance cannot be solved as given. Each message names the offending field or id.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum InstanceError {
    /// The format version is not one of [`VERSIONS`].
    #[error("unsupported instance version {0} (this solver reads versions 1 to {VERSION})")]
    Version(u32),
    /// A version 1 instance uses a field that only version 2 has.
    #[error("{0} needs \"version\": 2 (version 1 has no engineers' availability)")]
    NeedsVersion2(&'static str),
    /// Two engineers share an id.
    #[error("duplicate engineer id {0:?}")]
    DuplicateEngineer(String),
    /// An availability or away interval of an engineer ends at or before its start.
    #[error("engineer {engineer:?} has an empty {kind} interval [{start}, {end}]")]
    EmptyEngineerInterval {
        /// The engineer's id.
        engineer: String,
        /// `available` or `away`.
        kind: &'static str,
        /// The interval's start.
        start: i64,
        /// The interval's end.
        end: i64,
    },
    /// `grid_minutes` must be positive.
    #[error("grid_minutes must be positive, got {0}")]
    Grid(i64),
    /// `max_shift_minutes` must not be negative.
    #[error("max_shift_minutes must not be negative, got {0}")]
    MaxShift(i64),
    /// `buffer_minutes` must not be negative.
    #[error("buffer_minutes must not be negative, got {0}")]
    Buffer(i64),
    /// A weight is negative, which would reward a worse reflow.
    #[error("weight {name} must not be negative, got {value}")]
    Weight {
        /// The weight's field name.
        name: &'static str,
        /// Its value.
        value: i64,
    },
    /// Two rooms share an id.
    #[error("duplicate room id {0:?}")]
    DuplicateRoom(String),
    /// Two bookings share an id.
    #[error("duplicate booking id {0:?}")]
    DuplicateBooking(String),
    /// A booking names a room that is not in `rooms`.
    #[error("booking {booking:?} is in unknown room {room:?}")]
    UnknownRoom {
        /// The booking's id.
        booking: String,
        /// The room id it names.
        room: String,
    },
    /// A booking ends at or before its start.
    #[error("booking {booking:?} ends at {end}, not after its start {start}")]
    EmptyBooking {
        /// The booking's id.
        booking: String,
        /// Its start.
        start: i64,
        /// Its end.
        end: i64,
    },
    /// A booking has a party of zero.
    #[error("booking {0:?} has party_size 0")]
    EmptyParty(String),
    /// An opening or offline interval of a room ends at or before its start.
    #[error("room {room:?} has an empty {kind} interval [{start}, {end}]")]
    EmptyInterval {
        /// The room's id.
        room: String,
        /// `open` or `offline`.
        kind: &'static str,
        /// The interval's start.
        start: i64,
        /// The interval's end.
        end: i64,
    },
}

impl Instance {
    /// Checks the instance's shape: the first problem found, in field order, is the error.
    ///
    /// [`crate::solve`] assumes an instance that passes; call this first on anything read from outside.
    ///
    /// ```
    /// let mut instance = studioflow_solver::generate::studio(1);
    /// assert!(instance.check().is_ok());
    /// instance.grid_minutes = 0;
    /// assert_eq!(instance.check().unwrap_err().to_string(), "grid_minutes must be positive, got 0");
    /// ```
    pub fn check(&self) -> Result<(), InstanceError> {
        if !VERSIONS.contains(&self.version) {
            return Err(InstanceError::Version(self.version));
        }
        if self.version < 2 {
            if !self.engineers.is_empty() {
                return Err(InstanceError::NeedsVersion2("engineers"));
            }
            if self.bookings.iter().any(|b| !b.engineer_skills.is_empty()) {
                return Err(InstanceError::NeedsVersion2("bookings[].engineer_skills"));
            }
            if self.weights.engineer_change != crate::Weights::default().engineer_change {
                return Err(InstanceError::NeedsVersion2("weights.engineer_change"));
            }
        }
        if self.grid_minutes <= 0 {
            return Err(InstanceError::Grid(self.grid_minutes));
        }
        if self.max_shift_minutes < 0 {
            return Err(InstanceError::MaxShift(self.max_shift_minutes));
        }
        if self.buffer_minutes < 0 {
            return Err(InstanceError::Buffer(self.buffer_minutes));
        }
        let w = &self.weights;
        for (name, value) in [
            ("unresolved", w.unresolved),
            ("series_split", w.series_split),
            ("shift_step", w.shift_step),
            ("room_change", w.room_change),
            ("engineer_change", w.engineer_change),
        ] {
            if value < 0 {
                return Err(InstanceError::Weight { name, value });
            }
        }
        let mut rooms = HashSet::new();
        for room in &self.rooms {
            if !rooms.insert(room.id.as_str()) {
                return Err(InstanceError::DuplicateRoom(room.id.clone()));
            }
            for (kind, intervals) in [("open", &room.open), ("offline", &room.offline)] {
                if let Some(&[start, end]) = intervals.iter().find(|i| is_empty(i)) {
                    return Err(InstanceError::EmptyInterval { room: room.id.clone(), kind, start, end });
                }
            }
        }
        let mut engineers = HashSet::new();
        for engineer in &self.engineers {
            if !engineers.insert(engineer.id.as_str()) {
                return Err(InstanceError::DuplicateEngineer(engineer.id.clone()));
            }
            let available = engineer.available.as_deref().unwrap_or_default();
            for (kind, intervals) in [("available", available), ("away", engineer.away.as_slice())] {
                if let Some(&[start, end]) = intervals.iter().find(|i| is_empty(i)) {
                    return Err(InstanceError::EmptyEngineerInterval { engineer: engineer.id.clone(), kind, start, end });
                }
            }
        }
        let mut bookings = HashSet::new();
        for booking in &self.bookings {
            if !bookings.insert(booking.id.as_str()) {
                return Err(InstanceError::DuplicateBooking(booking.id.clone()));
            }
            if !rooms.contains(booking.room.as_str()) {
                return Err(InstanceError::UnknownRoom {
                    booking: booking.id.clone(),
                    room: booking.room.clone(),
                });
            }
            if booking.end <= booking.start {
                return Err(InstanceError::EmptyBooking {
                    booking: booking.id.clone(),
                    start: booking.start,
                    end: booking.end,
                });
            }
            if booking.party_size == 0 {
                return Err(InstanceError::EmptyParty(booking.id.clone()));
            }
        }
        Ok(())
    }
}

fn is_empty(&[start, end]: &Interval) -> bool {
    end <= start
}
