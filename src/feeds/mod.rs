//! Calendar feed secrets: the read-only key a subscription URL carries, because calendar programs
//! cannot send headers (API tokens, `store/tokens.rs`, are the same shape for clients that can).
//! Each secret opens exactly one calendar; only its SHA-256 is stored, so a copy of the database
//! does not leak working URLs. Created, listed and revoked with `studioflow feed`; checked by the
//! HTTP feed endpoint.
//! The HTTP route that serves a feed, beside `/mcp` on the same listener, is `http.rs`.

pub mod http;

use crate::auth::secret::{hash, random};
use crate::domain::CalendarOf;
use crate::store::{FeedRecord, Store, StoreError};
use chrono::{DateTime, Utc};

/// Why a feed could not be created.
#[derive(Debug, thiserror::Error)]
pub enum FeedError {
    #[error("no randomness for a secret: {0}")]
    NoRandomness(#[from] getrandom::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl crate::error::Blame for FeedError {
    fn is_ours(&self) -> bool {
        match self {
            FeedError::NoRandomness(_) => true,
            FeedError::Store(e) => e.is_ours(),
        }
    }
}

/// Creates a feed for one calendar: its record, and its secret (160 random bits), which is shown
/// once and never stored.
pub fn create(store: &mut Store, of: &CalendarOf, label: Option<&str>, now: DateTime<Utc>) -> Result<(FeedRecord, String), FeedError> {
    let secret = random(20)?;
    let id = format!("fd_{}", random(5)?);
    let record = store.write_with(|w| w.add_feed(&id, &hash(&secret), of, label, now))?;
    Ok((record, secret))
}

/// Whether `secret` opens the calendar `of`: it must be that calendar's, and not revoked.
pub fn opens(store: &Store, of: &CalendarOf, secret: &str) -> Result<bool, StoreError> {
    Ok(store.feed_by_hash(&hash(secret))?.is_some_and(|feed| feed.revoked.is_none() && &feed.calendar == of))
}

/// The path of a feed's URL, after the server's address.
pub fn path(of: &CalendarOf, secret: &str) -> String {
    format!("/calendars/{}/{}.ics?key={secret}", of.plural(), of.id())
}
