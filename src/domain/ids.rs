//! Newtypes for the ids of studio things, so that a room id never passes for a client id.
//! Ids are short slugs chosen by people (`studio-a`, `client-012`) or by the store (`bk_00017`).

use serde::{Deserialize, Serialize};
use std::fmt;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl $name {
            pub fn new(id: impl Into<String>) -> Self {
                $name(id.into())
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                $name(s.to_owned())
            }
        }
    };
}

id_type!(
    /// A room's slug, e.g. `studio-a`.
    RoomId
);
id_type!(
    /// A client's id, e.g. `client-012`.
    ClientId
);
id_type!(
    /// An engineer's id, e.g. `eng-03`.
    EngineerId
);
id_type!(
    /// A booking's id, e.g. `bk_00017`.
    BookingId
);
id_type!(
    /// A recurring series' id, e.g. `series-004`.
    SeriesId
);

/// Whether `s` is a usable slug: 1 to 64 of `a-z`, `0-9`, `-`, `_`, starting with a letter or digit.
pub fn is_slug(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && s.as_bytes()[0].is_ascii_alphanumeric()
}
