//! Random secrets and the form they are stored in. Calendar feed secrets and API tokens both show
//! a secret once and keep only its SHA-256, so a copy of the database opens nothing; this file is
//! the one place that makes and hashes them. It knows nothing of where they are stored.

use sha2::{Digest, Sha256};

/// `bytes` random bytes from the operating system, as lowercase unpadded base32.
pub fn random(bytes: usize) -> Result<String, getrandom::Error> {
    let mut buffer = vec![0u8; bytes];
    getrandom::fill(&mut buffer)?;
    Ok(data_encoding::BASE32_NOPAD.encode(&buffer).to_ascii_lowercase())
}

/// The stored form of a secret: its SHA-256, in lowercase hex.
pub fn hash(secret: &str) -> String {
    data_encoding::HEXLOWER.encode(&Sha256::digest(secret.as_bytes()))
}

/// PKCE's S256 transform (RFC 7636 §4.2): the unpadded base64url SHA-256 of a `code_verifier`,
/// which must equal the `code_challenge` the authorization request sent.
pub fn pkce_s256(verifier: &str) -> String {
    data_encoding::BASE64URL_NOPAD.encode(&Sha256::digest(verifier.as_bytes()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn pkce_s256_is_rfc_7636s_example() {
        // RFC 7636, Appendix B.
        assert_eq!(super::pkce_s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
    }
}
