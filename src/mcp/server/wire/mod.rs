//! The tools' arguments (`args.rs`) and answers (`answers.rs`) as they travel: the public
//! contract, with JSON schemas derived from the types, and the project's text rules as schemas
//! (here). Each answer is built by hand from domain types, so that a change inside the project
//! never changes the wire by accident.

use crate::domain::{Email, Id, Line, List, Name, Notes, Tag, MAX_LIST};
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use std::borrow::Cow;

// ---- the text rules, as schemas -------------------------------------------------------------

/// Each kind of text from outside (`domain::TextKind`) as a JSON schema: a string with its length,
/// so that a client sees the limit before the server refuses it.
macro_rules! text_schema {
    ($($name:ident: $min:expr),* $(,)?) => {$(
        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }

            fn inline_schema() -> bool {
                true
            }

            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                let mut schema = json_schema!({"type": "string", "maxLength": $name::KIND.max_chars()});
                if $min > 0 {
                    schema.insert("minLength".into(), $min.into());
                }
                schema
            }
        }
    )*};
}

text_schema!(Id: 1, Name: 1, Line: 0, Notes: 0, Email: 0, Tag: 1);

impl<T: JsonSchema> JsonSchema for List<T> {
    fn schema_name() -> Cow<'static, str> {
        format!("List_of_{}", T::schema_name()).into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "array", "items": generator.subschema_for::<T>(), "maxItems": MAX_LIST})
    }
}

/// A field that may be left out (no change), null (take it off) or given: `Some(None)` is null.
pub(super) fn nullable<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

mod answers;
mod args;
mod outbox;

pub use answers::*;
pub use args::*;
pub use outbox::*;
pub use crate::shapes::{booking, reflow, room, window, BookingOut, ReflowOut, RoomOut, WindowOut};

/// How many displaced bookings an answer lists; the count says how many there are in all.
const DISPLACED_SHOWN: usize = 20;

/// Bookings a change displaced, as answers show them: the first [`DISPLACED_SHOWN`], and the count.
pub fn displaced(tz: &crate::domain::StudioTz, bookings: &[crate::domain::Booking]) -> (Vec<BookingOut>, u32) {
    (bookings.iter().take(DISPLACED_SHOWN).map(|b| booking(tz, b)).collect(), bookings.len() as u32)
}
