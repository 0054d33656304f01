//! The issuer's signing keys, as the verifier keeps them: each JWK it can verify with (RSA, EC
//! P-256 or P-384, for signing, with an allowed `alg` that fits it), and how a token's key is
//! found among them (by `kid`, or the one key that fits its algorithm).

use super::{allowed_name, Rejection};
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use std::time::Instant;

#[derive(Default)]
pub(super) struct KeySet {
    pub(super) keys: Vec<Key>,
    /// When they were fetched; `None` before the first fetch.
    pub(super) fetched: Option<Instant>,
}

/// A usable signing key from the JWKS.
pub(super) struct Key {
    pub(super) kid: Option<String>,
    pub(super) kind: KeyKind,
    /// The JWK's `alg`, when it names one: then a token must use exactly it.
    pub(super) alg: Option<Algorithm>,
    pub(super) decoding: DecodingKey,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum KeyKind {
    Rsa,
    P256,
    P384,
}

impl KeyKind {
    pub(super) fn fits(self, alg: Algorithm) -> bool {
        use Algorithm::*;
        matches!((self, alg), (KeyKind::Rsa, RS256 | RS384 | RS512 | PS256) | (KeyKind::P256, ES256) | (KeyKind::P384, ES384))
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            KeyKind::Rsa => "an RSA key",
            KeyKind::P256 => "an EC P-256 key",
            KeyKind::P384 => "an EC P-384 key",
        }
    }
}

impl Key {
    /// The key a JWK describes, if it is one we verify with: a signing key (`use` absent or
    /// `sig`) of type RSA or EC P-256/P-384, whose `alg`, if given, is allowed and fits it.
    pub(super) fn from_jwk(jwk: &Jwk) -> Option<Key> {
        if jwk.common.public_key_use.as_ref().is_some_and(|u| *u != PublicKeyUse::Signature) {
            return None;
        }
        let kind = match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => KeyKind::Rsa,
            AlgorithmParameters::EllipticCurve(ec) if ec.curve == EllipticCurve::P256 => KeyKind::P256,
            AlgorithmParameters::EllipticCurve(ec) if ec.curve == EllipticCurve::P384 => KeyKind::P384,
            _ => return None,
        };
        let alg = match jwk.common.key_algorithm {
            None => None,
            Some(named) => {
                let alg = Algorithm::try_from(named).ok().filter(|a| allowed_name(*a).is_some() && kind.fits(*a))?;
                Some(alg)
            }
        };
        let decoding = DecodingKey::from_jwk(jwk).ok()?;
        Some(Key { kid: jwk.common.key_id.clone(), kind, alg, decoding })
    }

    /// Why this key cannot check a token signed with `alg`, if it cannot.
    pub(super) fn mismatch(&self, alg: Algorithm) -> Option<String> {
        let kid = self.kid.as_deref().unwrap_or("(no kid)");
        let token_alg = allowed_name(alg).unwrap_or("?");
        match self.alg {
            Some(own) if own != alg => {
                Some(format!("the token says {token_alg}, and key {kid} is for {}", allowed_name(own).unwrap_or("?")))
            }
            _ if !self.kind.fits(alg) => Some(format!("the token says {token_alg}, and key {kid} is {}", self.kind.name())),
            _ => None,
        }
    }
}

/// Where a token's key is in a [`KeySet`].
pub(super) enum Lookup {
    Found(usize),
    /// Not in the set: fetching the keys again may find it.
    Missing,
}

impl KeySet {
    pub(super) fn find(&self, kid: Option<&str>, alg: Algorithm) -> Result<Lookup, Rejection> {
        match kid {
            Some(kid) => Ok(match self.keys.iter().position(|k| k.kid.as_deref() == Some(kid)) {
                Some(i) => Lookup::Found(i),
                None => Lookup::Missing,
            }),
            // No kid: the one key that fits the algorithm, if there is exactly one.
            None => {
                let mut fitting = self.keys.iter().enumerate().filter(|(_, k)| k.mismatch(alg).is_none());
                match (fitting.next(), fitting.next()) {
                    (Some((i, _)), None) => Ok(Lookup::Found(i)),
                    (None, _) => Ok(Lookup::Missing),
                    (Some(_), Some(_)) => Err(Rejection::Invalid(
                        "the token names no key (kid), and the issuer has several that could have signed it".into(),
                    )),
                }
            }
        }
    }
}
