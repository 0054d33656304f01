//! Rejects malformed instances before anything is solved: a wrong version, impossible settings,
//! duplicate or dangling ids, empty intervals. It says nothing about whether a reflow is possible;
//! an instance that passes may still leave every booking unresolved.

use std::collections::HashSet;

use thiserror::Error;

use crate::instance::{Instance, Interval, VERSION};

/// Why an instance cannot be solved as given. Each message names the offending field or id.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum InstanceError {
    /// The format version is not [`VERSION`].
    #[error("unsupported instance version {0} (this solver reads version {VERSION})")]
    Version(u32),
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
        if self.version != VERSION {
            return Err(InstanceError::Version(self.version));
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
