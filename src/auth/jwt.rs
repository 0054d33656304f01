//! Placeholder for the OAuth access-token verifier (being written on wip/jwt); the interface the
//! HTTP front uses.

use super::Principal;
use std::time::Duration;

pub struct IssuerConfig {
    pub issuer: String,
    pub resource: String,
    pub leeway: Duration,
    pub min_refresh: Duration,
}

pub struct Verifier {
    config: IssuerConfig,
}

pub enum Rejection {
    Invalid(String),
    Unavailable(String),
}

impl Verifier {
    pub fn new(config: IssuerConfig) -> Result<Verifier, String> {
        Ok(Verifier { config })
    }

    pub async fn verify(&self, _token: &str) -> Result<Principal, Rejection> {
        Err(Rejection::Unavailable(format!("no verifier for {} yet", self.config.issuer)))
    }
}
