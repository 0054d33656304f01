//! Issue 11's API tokens below the wire: created with a secret shown once and stored as its
//! hash; listed; revoked; checked (valid, unknown, revoked, expired) with the last use recorded
//! at most once a minute, and never at the cost of a failed check; a name unique among live tokens.
//! Every test runs on both backends.

use crate::support::on_both;
use chrono::{DateTime, Duration, SubsecRound, Utc};
use studioflow::auth::{Scope, Scopes};
use studioflow::store::{ApiToken, Store, StoreError, TokenCheck, TokenStatus};

fn read() -> Scopes {
    [Scope::StudioRead].into_iter().collect()
}

/// A whole second, as the store keeps instants.
fn second(at: &str) -> DateTime<Utc> {
    at.parse().unwrap()
}

fn create(store: &mut Store, name: &str, expires: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Result<(ApiToken, String), StoreError> {
    store.write_with(|w| w.create_token(name, read(), expires, now))
}

/// The field an `Invalid` error names, and its message.
fn invalid<T: std::fmt::Debug>(result: Result<T, StoreError>) -> (&'static str, String) {
    match result {
        Err(StoreError::Invalid { field, message }) => (field, message),
        other => panic!("expected Invalid, got {other:?}"),
    }
}

on_both! {
    fn a_token_is_created_with_a_secret_shown_once_and_stored_as_its_hash(db) {
        let mut store = Store::open(db).unwrap();
        let now = second("2026-09-01T10:00:00Z") + Duration::milliseconds(700);
        let scopes = Scopes::parse_list("reflow:apply,studio:read").unwrap();
        let (token, secret) = store.write_with(|w| w.create_token("  mixing agent ", scopes, Some(now + Duration::days(30)), now)).unwrap();

        let body = secret.strip_prefix("sft_").expect("the secret's prefix");
        assert_eq!(body.len(), 52, "256 bits in unpadded base32: {secret}");
        assert!(body.chars().all(|c| c.is_ascii_lowercase() || ('2'..='7').contains(&c)), "{secret}");
        let id = token.id.strip_prefix("tok_").expect("the id's prefix");
        assert_eq!(id.len(), 8, "40 bits in base32: {}", token.id);
        assert_eq!(token.name, "mixing agent", "trimmed");
        assert_eq!((token.scopes, token.created), (scopes, now.trunc_subsecs(0)));
        assert_eq!((token.last_used, token.revoked), (None, None));
        assert_eq!(token.expires, Some(second("2026-10-01T10:00:00Z")));
        assert_eq!(store.tokens().unwrap(), vec![token.clone()], "listed as created");

        let stored = db.rows(&format!("SELECT secret_hash, scopes FROM api_tokens WHERE id = '{}'", token.id));
        assert_eq!(stored, [[Some(studioflow::auth::secret::hash(&secret)), Some("studio:read reflow:apply".to_owned())]]);

        // A second token gets another secret and id, and lists after the first.
        let (other, other_secret) = create(&mut store, "desk", None, now).unwrap();
        assert_ne!((&other.id, &other_secret), (&token.id, &secret));
        let names: Vec<String> = store.tokens().unwrap().into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["mixing agent", "desk"], "oldest first");
    }

    fn authenticate_tells_valid_unknown_revoked_and_expired_apart(db) {
        let mut store = Store::open(db).unwrap();
        let now = second("2026-09-01T10:00:00Z");
        let expires = now + Duration::days(1);
        let (token, secret) = create(&mut store, "agent", Some(expires), now).unwrap();

        assert!(matches!(store.authenticate_token(&secret, now).unwrap(), TokenCheck::Valid(t) if t.id == token.id));
        let mut wrong = secret.clone();
        wrong.replace_range(10..11, if &secret[10..11] == "a" { "b" } else { "a" });
        assert_eq!(store.authenticate_token(&wrong, now).unwrap(), TokenCheck::Unknown, "one character off");
        assert_eq!(store.authenticate_token(secret.trim_start_matches("sft_"), now).unwrap(), TokenCheck::Unknown, "without its prefix");
        assert_eq!(store.authenticate_token("", now).unwrap(), TokenCheck::Unknown);
        assert_eq!(store.authenticate_token("sft_", now).unwrap(), TokenCheck::Unknown);

        // Expiry is an instant: the token works up to it, not at it.
        assert!(matches!(store.authenticate_token(&secret, expires - Duration::seconds(1)).unwrap(), TokenCheck::Valid(_)));
        assert!(matches!(store.authenticate_token(&secret, expires).unwrap(), TokenCheck::Expired(t) if t.id == token.id));
        assert_eq!(store.tokens().unwrap()[0].status(expires), TokenStatus::Expired);

        let (revoked, _) = store.write_with(|w| w.revoke_token(&token.id, now + Duration::hours(1))).unwrap();
        assert_eq!(revoked.revoked, Some(now + Duration::hours(1)));
        assert!(matches!(store.authenticate_token(&secret, now + Duration::hours(2)).unwrap(), TokenCheck::Revoked(t) if t.revoked == revoked.revoked));
        assert!(matches!(store.authenticate_token(&secret, expires + Duration::days(1)).unwrap(), TokenCheck::Revoked(_)), "revoked wins over expired");
        assert_eq!(store.tokens().unwrap()[0].status(now), TokenStatus::Revoked);
    }

    fn the_last_use_is_recorded_at_most_once_a_minute(db) {
        let mut store = Store::open(db).unwrap();
        let t0 = second("2026-09-01T10:00:00Z");
        let (_, secret) = create(&mut store, "agent", None, t0).unwrap();
        let stored = |store: &Store| store.tokens().unwrap()[0].last_used;
        let used_at = |store: &Store, at: DateTime<Utc>| match store.authenticate_token(&secret, at).unwrap() {
            TokenCheck::Valid(token) => token.last_used,
            other => panic!("{other:?}"),
        };

        assert_eq!(stored(&store), None, "never used");
        assert_eq!(used_at(&store, t0 + Duration::seconds(5)), Some(t0 + Duration::seconds(5)));
        assert_eq!(stored(&store), Some(t0 + Duration::seconds(5)), "the first use is recorded");
        assert_eq!(used_at(&store, t0 + Duration::seconds(50)), Some(t0 + Duration::seconds(5)), "within the minute: not written");
        assert_eq!(stored(&store), Some(t0 + Duration::seconds(5)));
        assert_eq!(used_at(&store, t0 + Duration::seconds(65)), Some(t0 + Duration::seconds(65)), "a minute on: written again");
        assert_eq!(stored(&store), Some(t0 + Duration::seconds(65)));
        // Another connection's check sees the recorded use and does not write it again.
        let other = Store::open(db).unwrap();
        assert_eq!(used_at(&other, t0 + Duration::seconds(100)), Some(t0 + Duration::seconds(65)));
    }

    fn a_busy_database_neither_fails_nor_holds_up_a_check(db) {
        let mut store = Store::open(db).unwrap();
        let now = Utc::now();
        let (_, secret) = create(&mut store, "agent", None, now).unwrap();

        // Another connection holds the write lock, as a reflow being applied would, and has written
        // the token's row (on PostgreSQL a writer blocks only the rows it writes).
        let mut other = Store::open(db).unwrap();
        let writer = other.write().unwrap();
        writer.conn().execute_batch("UPDATE api_tokens SET scopes = scopes").unwrap();
        let started = std::time::Instant::now();
        let check = store.authenticate_token(&secret, now).unwrap();
        assert!(started.elapsed() < std::time::Duration::from_secs(2), "waited {:?}", started.elapsed());
        assert!(matches!(check, TokenCheck::Valid(ref t) if t.last_used.is_none()), "valid, its use not recorded: {check:?}");
        drop(writer);

        // The next check records it; and the connection's writes wait out another's lock as before
        // (with the check's short wait left behind, this write would fail as busy).
        assert!(matches!(store.authenticate_token(&secret, now).unwrap(), TokenCheck::Valid(t) if t.last_used.is_some()));
        let writer = other.write().unwrap();
        let waiter = std::thread::spawn(move || {
            let mut store = store;
            store.write_with(|w| w.create_token("second", read(), None, now)).map(|_| ())
        });
        std::thread::sleep(std::time::Duration::from_millis(300));
        drop(writer);
        waiter.join().unwrap().unwrap();
    }

    fn a_live_name_is_taken_until_its_token_is_revoked(db) {
        let mut store = Store::open(db).unwrap();
        let now = Utc::now();
        let (first, _) = create(&mut store, "agent", None, now).unwrap();
        let (field, message) = invalid(create(&mut store, " agent ", None, now));
        assert_eq!(field, "name");
        assert!(message.contains("\"agent\"") && message.contains("revoke") && message.contains("another name"), "{message}");
        assert_eq!(store.tokens().unwrap().len(), 1, "nothing written");

        store.write_with(|w| w.revoke_token(&first.id, now)).unwrap();
        let (second, _) = create(&mut store, "agent", None, now).unwrap();
        let listed: Vec<(String, TokenStatus)> = store.tokens().unwrap().iter().map(|t| (t.id.clone(), t.status(now))).collect();
        assert_eq!(listed, [(first.id, TokenStatus::Revoked), (second.id, TokenStatus::Active)]);
    }

    fn bad_names_scopes_and_expiries_are_refused_with_what_to_change(db) {
        let mut store = Store::open(db).unwrap();
        let now = Utc::now();
        for name in ["", "   ", &"x".repeat(65)] {
            let (field, message) = invalid(create(&mut store, name, None, now));
            assert!(field == "name" && message.contains("1 to 64 characters"), "{name:?}: {message}");
        }
        for (name, says) in [
            ("two\nlines", "holds a line break (U+000A"),
            ("tab\there", "holds a control character (U+0009"),
            ("bell\u{7}", "holds a control character (U+0007"),
            ("agent\u{202e}x", "holds a bidirectional formatting character (U+202E"),
        ] {
            let (field, message) = invalid(create(&mut store, name, None, now));
            assert!(field == "name" && message.contains(says), "{name:?}: {message}");
        }
        let (field, message) = invalid(store.write_with(|w| w.create_token("agent", Scopes::NONE, None, now)));
        assert!(field == "scopes" && message.contains("studio:read"), "{message}");
        let (field, _) = invalid(create(&mut store, "agent", Some(now), now));
        assert_eq!(field, "expires", "an expiry that is not in the future");
        assert!(store.tokens().unwrap().is_empty(), "nothing written");

        // 64 characters, counted as characters, not bytes.
        let (token, _) = create(&mut store, &"é".repeat(64), None, now).unwrap();
        assert_eq!(token.name.chars().count(), 64);
    }

    fn revoking_an_unknown_or_revoked_token_says_where_the_ids_are(db) {
        let mut store = Store::open(db).unwrap();
        let now = Utc::now();
        let (token, _) = create(&mut store, "agent", None, now).unwrap();
        let (field, message) = invalid(store.write_with(|w| w.revoke_token("tok_nothere", now)));
        assert!(field == "id" && message.contains("tok_nothere") && message.contains("token list"), "{message}");
        store.write_with(|w| w.revoke_token(&token.id, now)).unwrap();
        let (field, message) = invalid(store.write_with(|w| w.revoke_token(&token.id, now + Duration::hours(1))));
        assert!(field == "id" && message.contains("already revoked") && message.contains("token list"), "{message}");
        assert_eq!(store.tokens().unwrap()[0].revoked, Some(now.trunc_subsecs(0)), "the first revocation stands");
    }
}
