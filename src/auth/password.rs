//! Staff passwords: argon2id (RustCrypto's `argon2`, its default cost: 19 MiB, 2 passes, one
//! lane, as OWASP recommends) in PHC strings (`$argon2id$v=19$m=19456,t=2,p=1$salt$hash`), with a
//! 128-bit salt from the operating system. Only these strings are stored; a password is never
//! logged, stored or compared in any other form. Hashing takes tens of milliseconds on purpose:
//! callers run it on a blocking thread.

use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use argon2::Argon2;

/// The shortest password accepted, in characters.
pub const MIN_LENGTH: usize = 10;
/// The longest, in bytes: hashing is costly, and no one types more.
pub const MAX_BYTES: usize = 1024;

/// Why a password cannot be set.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PasswordError {
    #[error("a password is at least {MIN_LENGTH} characters (this one has {0}): choose a longer one")]
    TooShort(usize),
    #[error("a password is at most {MAX_BYTES} bytes")]
    TooLong,
    #[error("a password has no control characters or line breaks (a terminal's Enter is not part of it)")]
    Control,
    #[error("no random salt could be had from the operating system: {0}")]
    Random(String),
    #[error("the password could not be hashed: {0}")]
    Hash(String),
}

/// Checks a new password's shape: long enough, not absurdly long, one line.
pub fn check(password: &str) -> Result<(), PasswordError> {
    if password.len() > MAX_BYTES {
        return Err(PasswordError::TooLong);
    }
    if password.chars().any(char::is_control) {
        return Err(PasswordError::Control);
    }
    let count = password.chars().count();
    if count < MIN_LENGTH {
        return Err(PasswordError::TooShort(count));
    }
    Ok(())
}

/// The PHC string of a new password, after [`check`].
pub fn hash(password: &str) -> Result<String, PasswordError> {
    check(password)?;
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|e| PasswordError::Random(e.to_string()))?;
    Argon2::default()
        .hash_password_with_salt(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(|e| PasswordError::Hash(e.to_string()))
}

/// Whether `password` is the one `stored` (a PHC string) was made from. A malformed string
/// matches nothing. Over-long input is refused before any hashing.
pub fn verify(password: &str, stored: &str) -> bool {
    password.len() <= MAX_BYTES && Argon2::default().verify_password(password.as_bytes(), stored).is_ok()
}

/// Spends what a verification costs, for a name that has no password: a login for an unknown
/// user takes as long as one for a known user, so timing tells no one which names exist.
pub fn waste_time() {
    const DUMMY: &str = "$argon2id$v=19$m=19456,t=2,p=1$c3R1ZGlvZmxvdy1kdW1teQ$OBBbK1N0m+5A9FCf0CU7j9l1SIq7VXkJa2gVgqf6pD0";
    let _ = Argon2::default().verify_password(b"studioflow", DUMMY);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_hashes_to_argon2id_and_verifies() {
        let stored = hash("correct horse battery").unwrap();
        assert!(stored.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{stored}");
        assert!(verify("correct horse battery", &stored));
        assert!(!verify("correct horse batterz", &stored));
        assert!(!verify("correct horse battery", "not a phc string"));
        assert_ne!(hash("correct horse battery").unwrap(), stored, "salted");
    }

    #[test]
    fn passwords_are_checked() {
        assert_eq!(check("short"), Err(PasswordError::TooShort(5)));
        assert_eq!(check("ten chars\n!"), Err(PasswordError::Control));
        assert_eq!(check(&"x".repeat(MAX_BYTES + 1)), Err(PasswordError::TooLong));
        assert_eq!(check("long enough now"), Ok(()));
    }
}
