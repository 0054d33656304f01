//! Placeholder for API tokens (being written on wip/tokens): the interface the HTTP front uses.

use super::{Result, Store};
use crate::auth::Scopes;
use chrono::{DateTime, Utc};

pub const TOKEN_PREFIX: &str = "sft_";

pub struct ApiToken {
    pub id: String,
    pub name: String,
    pub scopes: Scopes,
}

pub enum TokenCheck {
    Valid(ApiToken),
    Unknown,
    Revoked(ApiToken),
    Expired(ApiToken),
}

impl Store {
    pub fn authenticate_token(&mut self, _secret: &str, _now: DateTime<Utc>) -> Result<TokenCheck> {
        Ok(TokenCheck::Unknown)
    }
}
