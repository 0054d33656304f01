//! The schema, as an ordered list of migrations: SQLite's here, PostgreSQL's the same tables in
//! `migrations_postgres.sql`, one section per step, so a version means one schema on both.
//! SQLite's `PRAGMA user_version` (PostgreSQL: the table `studioflow_schema`) records how many have
//! run; opening a store runs the rest, each in its own transaction, so a database is always at one
//! version. A migration is never edited once released: a change to the schema is a new migration.

use super::db::{self, Backend, Connection};

/// Migration `i` takes a database from version `i` to version `i + 1`.
pub const MIGRATIONS: &[&str] = &[
    // 1: the studio, its rooms and people, bookings, series and offline windows.
    r#"
    CREATE TABLE studio (
        id             INTEGER PRIMARY KEY CHECK (id = 1),
        name           TEXT    NOT NULL,
        timezone       TEXT    NOT NULL,
        notice_minutes INTEGER NOT NULL CHECK (notice_minutes >= 0),
        clock          INTEGER            -- unix seconds of a scenario's fixed "now"; NULL is real time
    );
    CREATE TABLE rooms (
        id             TEXT    PRIMARY KEY,
        name           TEXT    NOT NULL,
        capacity       INTEGER NOT NULL CHECK (capacity > 0),
        features       TEXT    NOT NULL,  -- JSON array of strings, sorted
        hours          TEXT    NOT NULL,  -- JSON array of lines such as "mon-fri 10:00-01:00"
        buffer_minutes INTEGER NOT NULL CHECK (buffer_minutes >= 0)
    );
    CREATE TABLE clients   (id TEXT PRIMARY KEY, name TEXT NOT NULL);
    CREATE TABLE engineers (id TEXT PRIMARY KEY, name TEXT NOT NULL);
    CREATE TABLE series (
        id          TEXT    PRIMARY KEY,
        rrule       TEXT    NOT NULL,
        first_start INTEGER NOT NULL
    );
    CREATE TABLE bookings (
        seq         INTEGER PRIMARY KEY,
        id          TEXT    NOT NULL UNIQUE,
        room_id     TEXT    NOT NULL REFERENCES rooms(id),
        client_id   TEXT    NOT NULL REFERENCES clients(id),
        engineer_id TEXT             REFERENCES engineers(id),
        start_at    INTEGER NOT NULL,
        end_at      INTEGER NOT NULL,
        party_size  INTEGER NOT NULL CHECK (party_size > 0),
        requires    TEXT    NOT NULL,  -- JSON array of strings, sorted
        series_id   TEXT             REFERENCES series(id),
        status      TEXT    NOT NULL CHECK (status IN ('confirmed', 'tentative', 'cancelled')),
        pinned      INTEGER NOT NULL CHECK (pinned IN (0, 1)),
        created_at  INTEGER NOT NULL,
        updated_at  INTEGER NOT NULL,
        CHECK (end_at > start_at)
    );
    CREATE INDEX bookings_room     ON bookings (room_id, start_at);
    CREATE INDEX bookings_client   ON bookings (client_id, start_at);
    CREATE INDEX bookings_engineer ON bookings (engineer_id, start_at) WHERE engineer_id IS NOT NULL;
    CREATE INDEX bookings_start    ON bookings (start_at, seq);
    CREATE INDEX bookings_series   ON bookings (series_id) WHERE series_id IS NOT NULL;
    CREATE TABLE offline_windows (
        id         INTEGER PRIMARY KEY,
        room_id    TEXT    NOT NULL REFERENCES rooms(id),
        from_at    INTEGER NOT NULL,
        to_at      INTEGER NOT NULL,
        reason     TEXT    NOT NULL,
        created_at INTEGER NOT NULL,
        CHECK (to_at > from_at)
    );
    CREATE INDEX offline_room ON offline_windows (room_id, from_at);
    "#,
    // 2: reflow history (what each reflow planned and moved) and idempotency keys for writes.
    r#"
    CREATE TABLE reflows (
        id          TEXT    PRIMARY KEY,
        month       TEXT    NOT NULL,
        request     TEXT    NOT NULL,  -- JSON: the reflow's parameters
        created_at  INTEGER NOT NULL,
        applied     INTEGER NOT NULL CHECK (applied IN (0, 1)),
        affected    INTEGER NOT NULL,
        moved       INTEGER NOT NULL,
        unresolved  INTEGER NOT NULL,
        cost        INTEGER NOT NULL
    );
    CREATE TABLE reflow_moves (
        reflow_id   TEXT    NOT NULL REFERENCES reflows(id) ON DELETE CASCADE,
        booking_id  TEXT    NOT NULL REFERENCES bookings(id),
        from_room   TEXT    NOT NULL,
        from_start  INTEGER NOT NULL,
        from_end    INTEGER NOT NULL,
        to_room     TEXT    NOT NULL,
        to_start    INTEGER NOT NULL,
        to_end      INTEGER NOT NULL,
        PRIMARY KEY (reflow_id, booking_id)
    );
    CREATE INDEX reflow_moves_booking ON reflow_moves (booking_id);
    CREATE TABLE reflow_unresolved (
        reflow_id   TEXT    NOT NULL REFERENCES reflows(id) ON DELETE CASCADE,
        booking_id  TEXT    NOT NULL REFERENCES bookings(id),
        reason      TEXT    NOT NULL,
        PRIMARY KEY (reflow_id, booking_id)
    );
    CREATE TABLE idempotency_keys (
        key         TEXT    PRIMARY KEY,
        response    TEXT    NOT NULL,  -- JSON: the ids the first request wrote
        created_at  INTEGER NOT NULL
    );
    "#,
    // 3: durable tasks (a month reflow run as an MCP task). A task in a final state never changes
    // again, and only one reflow per month is live at a time: the database itself holds both rules.
    r#"
    CREATE TABLE tasks (
        id               TEXT    PRIMARY KEY,
        kind             TEXT    NOT NULL,
        request          TEXT    NOT NULL,  -- JSON: the tool's arguments
        month            TEXT,
        status           TEXT    NOT NULL CHECK (status IN ('working', 'input_required', 'completed', 'failed', 'cancelled')),
        status_message   TEXT,
        created_ms       INTEGER NOT NULL,  -- unix milliseconds
        updated_ms       INTEGER NOT NULL,
        ttl_ms           INTEGER,           -- NULL: kept until deleted
        poll_interval_ms INTEGER NOT NULL,
        reflow_id        TEXT,              -- the plan awaiting approval, then the applied one
        input_requests   TEXT,              -- JSON, while input_required
        result           TEXT,              -- JSON, when completed
        error            TEXT               -- JSON, when failed
    );
    CREATE UNIQUE INDEX tasks_one_live_reflow_per_month ON tasks (month)
        WHERE status IN ('working', 'input_required') AND month IS NOT NULL;
    CREATE INDEX tasks_expiry ON tasks (created_ms) WHERE ttl_ms IS NOT NULL;
    ALTER TABLE reflows ADD COLUMN lower_bound INTEGER;  -- the solver's proven bound on the cost
    CREATE TRIGGER tasks_final_states_never_change BEFORE UPDATE ON tasks
        WHEN OLD.status IN ('completed', 'failed', 'cancelled')
    BEGIN
        SELECT RAISE(ABORT, 'a task in a final state never changes');
    END;
    "#,
    // 4: a finished task keeps what happened, not a protocol document: the reflow it ended with
    // (already in reflow_id), or its refusal, or its failure; the edge writes what clients read.
    // The documents of tasks finished before are read back into the new columns.
    r#"
    DROP TRIGGER tasks_final_states_never_change;
    ALTER TABLE tasks ADD COLUMN refusal TEXT;  -- completed without doing its work: what to change
    ALTER TABLE tasks ADD COLUMN failure TEXT;  -- failed: what went wrong on our side
    UPDATE tasks SET refusal = COALESCE(json_extract(result, '$.content[0].text'), 'the reflow was refused')
        WHERE status = 'completed' AND json_extract(result, '$.isError') = 1;
    UPDATE tasks SET failure = COALESCE(json_extract(error, '$.message'), 'the reflow failed')
        WHERE status = 'failed';
    ALTER TABLE tasks DROP COLUMN input_requests;
    ALTER TABLE tasks DROP COLUMN result;
    ALTER TABLE tasks DROP COLUMN error;
    CREATE TRIGGER tasks_final_states_never_change BEFORE UPDATE ON tasks
        WHEN OLD.status IN ('completed', 'failed', 'cancelled')
    BEGIN
        SELECT RAISE(ABORT, 'a task in a final state never changes');
    END;
    "#,
    // 5: the booking horizon (how far ahead a session may be booked), and a counter for reflow ids
    // so that an id is never given twice once unapplied plans expire and are deleted.
    r#"
    ALTER TABLE studio ADD COLUMN horizon_days INTEGER NOT NULL DEFAULT 730
        CHECK (horizon_days BETWEEN 1 AND 3650);
    CREATE TABLE id_counters (
        name TEXT    PRIMARY KEY,
        last INTEGER NOT NULL
    );
    INSERT INTO id_counters (name, last)
        SELECT 'reflow', COALESCE(MAX(CAST(substr(id, 4) AS INTEGER)), 0) FROM reflows;
    CREATE INDEX reflows_unapplied ON reflows (created_at) WHERE applied = 0;
    "#,
    // 6: running the studio from an agent. Rooms can be retired; clients and engineers gain contact
    // details and can be deactivated; bookings gain notes, holds and the displaced flag (set when a
    // change to its room puts a booking out of it); reflows can be undone; and every change is
    // recorded as an event, numbered in commit order (writers are serialised by BEGIN IMMEDIATE).
    r#"
    ALTER TABLE rooms ADD COLUMN active INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1));
    ALTER TABLE clients ADD COLUMN email TEXT;
    ALTER TABLE clients ADD COLUMN phone TEXT;
    ALTER TABLE clients ADD COLUMN notes TEXT;
    ALTER TABLE clients ADD COLUMN active INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1));
    ALTER TABLE engineers ADD COLUMN email TEXT;
    ALTER TABLE engineers ADD COLUMN phone TEXT;
    ALTER TABLE engineers ADD COLUMN notes TEXT;
    ALTER TABLE engineers ADD COLUMN active INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1));
    ALTER TABLE engineers ADD COLUMN skills TEXT NOT NULL DEFAULT '[]';  -- JSON array of strings
    ALTER TABLE bookings ADD COLUMN notes TEXT;
    ALTER TABLE bookings ADD COLUMN hold_until INTEGER;  -- unix seconds; tentative bookings only
    ALTER TABLE bookings ADD COLUMN displaced INTEGER NOT NULL DEFAULT 0 CHECK (displaced IN (0, 1));
    CREATE INDEX bookings_holds ON bookings (hold_until) WHERE hold_until IS NOT NULL;
    CREATE INDEX bookings_displaced ON bookings (start_at) WHERE displaced = 1;
    ALTER TABLE reflows ADD COLUMN undone_at INTEGER;  -- unix seconds; NULL: not undone
    ALTER TABLE reflows ADD COLUMN undone_by TEXT;
    ALTER TABLE reflow_moves ADD COLUMN was_displaced INTEGER NOT NULL DEFAULT 0 CHECK (was_displaced IN (0, 1));
    CREATE TABLE events (
        seq        INTEGER PRIMARY KEY AUTOINCREMENT,
        at         INTEGER NOT NULL,  -- unix seconds, the studio's clock
        real_at    INTEGER NOT NULL,  -- unix milliseconds, the real clock
        who        TEXT    NOT NULL,
        via        TEXT    NOT NULL,
        entity     TEXT    NOT NULL CHECK (entity IN ('booking', 'room', 'client', 'engineer', 'offline_window', 'reflow')),
        entity_id  TEXT    NOT NULL,
        action     TEXT    NOT NULL,
        before     TEXT,              -- JSON object of the changed fields as they were; NULL when created
        after      TEXT               -- JSON object of the changed fields as they are; NULL when removed
    );
    CREATE INDEX events_entity ON events (entity, entity_id, seq);
    "#,
    // 7: calendars as iCalendar. Every booking has a revision, raised by the database itself on
    // any change to what a calendar shows (place, time, people, status), so a calendar program
    // sees a higher SEQUENCE whatever code made the change. Feed secrets are stored as SHA-256
    // hashes, each scoped to one calendar (a room, a client or an engineer), and revoked by time.
    r#"
    ALTER TABLE bookings ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;
    CREATE TRIGGER bookings_revision AFTER UPDATE OF room_id, client_id, engineer_id, start_at, end_at,
        party_size, requires, status ON bookings
    BEGIN
        UPDATE bookings SET revision = OLD.revision + 1 WHERE seq = NEW.seq;
    END;
    CREATE TABLE feed_secrets (
        id          TEXT    PRIMARY KEY,               -- fd_ and 40 random bits, to name it when revoking
        secret_hash TEXT    NOT NULL UNIQUE,           -- hex SHA-256 of the secret; the secret is never stored
        kind        TEXT    NOT NULL CHECK (kind IN ('room', 'client', 'engineer')),
        target      TEXT    NOT NULL,                  -- the room, client or engineer id
        label       TEXT,
        created_at  INTEGER NOT NULL,
        revoked_at  INTEGER
    );
    "#,
    // 8: remote access. API tokens are stored as SHA-256 hashes of their secrets, as feed secrets
    // are, with their scopes and expiry, and revoked by time; a name is unique among live tokens,
    // because the history records it. Every task records the principal that created it, which
    // alone may read, answer or cancel it.
    r#"
    CREATE TABLE api_tokens (
        id           TEXT    PRIMARY KEY,      -- tok_ and 40 random bits, to name it when revoking
        name         TEXT    NOT NULL,
        secret_hash  TEXT    NOT NULL UNIQUE,  -- hex SHA-256 of the secret; the secret is never stored
        scopes       TEXT    NOT NULL,         -- space-separated scope names
        created_at   INTEGER NOT NULL,         -- unix seconds, real time (tokens age in real time)
        last_used_at INTEGER,
        expires_at   INTEGER,
        revoked_at   INTEGER
    );
    CREATE UNIQUE INDEX api_tokens_live_name ON api_tokens (name) WHERE revoked_at IS NULL;
    ALTER TABLE tasks ADD COLUMN owner TEXT;   -- the principal's id; NULL: the local user (stdio, HTTP without auth)
    CREATE INDEX tasks_owner ON tasks (owner, created_ms) WHERE owner IS NOT NULL;
    "#,
    // 9: many servers on one database. Any server may run any working task: it claims the task
    // with a lease (a random token and an expiry on the database's clock), renews it while it
    // solves, and finishes only while it still holds it, so a server that died is replaced and one
    // that comes back from a pause cannot apply twice. (PostgreSQL also gets the calendar's
    // no-overlap rules as exclusion constraints: migrations_postgres.sql.)
    r#"
    ALTER TABLE tasks ADD COLUMN lease_token TEXT;         -- random per claim; NULL: not held
    ALTER TABLE tasks ADD COLUMN lease_expires_ms INTEGER; -- unix ms; NULL: claimable at once
    ALTER TABLE tasks ADD COLUMN claimed_by TEXT;          -- the server that holds or last held it, for logs
    ALTER TABLE tasks ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX tasks_claimable ON tasks (lease_expires_ms) WHERE status = 'working';
    "#,
    // 10: the operator's own acts in the history. Creating and revoking an API token, and
    // cancelling a task (by `studioflow task cancel`, or because its owner's token was revoked),
    // are events too: the entity check gains 'token' and 'task'. SQLite cannot change a CHECK in
    // place, so the table is rebuilt with its rows and numbers (events are never deleted, so the
    // largest seq copied is where AUTOINCREMENT goes on; a rename carries sqlite_sequence along).
    r#"
    CREATE TABLE events_new (
        seq        INTEGER PRIMARY KEY AUTOINCREMENT,
        at         INTEGER NOT NULL,
        real_at    INTEGER NOT NULL,
        who        TEXT    NOT NULL,
        via        TEXT    NOT NULL,
        entity     TEXT    NOT NULL CHECK (entity IN ('booking', 'room', 'client', 'engineer', 'offline_window', 'reflow', 'token', 'task')),
        entity_id  TEXT    NOT NULL,
        action     TEXT    NOT NULL,
        before     TEXT,
        after      TEXT
    );
    INSERT INTO events_new (seq, at, real_at, who, via, entity, entity_id, action, before, after)
        SELECT seq, at, real_at, who, via, entity, entity_id, action, before, after FROM events ORDER BY seq;
    DROP TABLE events;
    ALTER TABLE events_new RENAME TO events;
    CREATE INDEX events_entity ON events (entity, entity_id, seq);
    "#,
    // 11 and 12: empty, and they stay so: databases at 13 and later have passed them, so what
    // they were kept for came later, under later numbers.
    "SELECT 1;",
    "SELECT 1;",
    // 13: studioflow as its own OAuth 2.1 authorization server. Staff accounts (a role that gives
    // scopes; an argon2id hash of the password, or the SHA-256 of a one-time set-up secret), the
    // clients that registered (RFC 7591), the codes, grants and tokens issued to them: every
    // secret stored as its SHA-256, as API tokens are. A grant is one user's consent to one
    // client; its access and refresh tokens are rows of `oauth_tokens`, read by hash. The history
    // gains users and grants.
    r#"
    CREATE TABLE users (
        id             TEXT    PRIMARY KEY,           -- usr_ and 40 random bits
        name           TEXT    NOT NULL UNIQUE,       -- what the login form and the history show
        email          TEXT,
        role           TEXT    NOT NULL CHECK (role IN ('viewer', 'staff', 'manager')),
        password_hash  TEXT,                          -- argon2id PHC string; NULL: not set yet
        setup_hash     TEXT    UNIQUE,                -- SHA-256 of a one-time set-up secret
        setup_expires_at INTEGER,
        created_at     INTEGER NOT NULL,              -- unix seconds, real time
        disabled_at    INTEGER
    );
    CREATE TABLE oauth_clients (
        id             TEXT    PRIMARY KEY,           -- cl_ and 80 random bits
        name           TEXT    NOT NULL,
        redirect_uris  TEXT    NOT NULL,              -- a JSON list, matched exactly
        metadata       TEXT    NOT NULL,              -- the registration as answered (JSON)
        created_at     INTEGER NOT NULL
    );
    CREATE TABLE oauth_grants (
        id             TEXT    PRIMARY KEY,           -- gr_ and 40 random bits
        user_id        TEXT    NOT NULL REFERENCES users (id),
        client_id      TEXT    NOT NULL,              -- a registered client's id, or a CIMD URL
        client_name    TEXT    NOT NULL,
        scopes         TEXT    NOT NULL,              -- what the user consented to, within the role then
        created_at     INTEGER NOT NULL,
        last_used_at   INTEGER,
        revoked_at     INTEGER,
        revoked_why    TEXT
    );
    CREATE INDEX oauth_grants_user ON oauth_grants (user_id);
    CREATE TABLE oauth_codes (
        code_hash      TEXT    PRIMARY KEY,
        user_id        TEXT    NOT NULL REFERENCES users (id),
        client_id      TEXT    NOT NULL,
        client_name    TEXT    NOT NULL,
        redirect_uri   TEXT    NOT NULL,
        challenge      TEXT    NOT NULL,              -- PKCE S256 code_challenge
        scopes         TEXT    NOT NULL,
        expires_at_ms  INTEGER NOT NULL,
        grant_id       TEXT                           -- set when exchanged: a second use revokes it
    );
    CREATE TABLE oauth_tokens (
        token_hash     TEXT    PRIMARY KEY,
        grant_id       TEXT    NOT NULL REFERENCES oauth_grants (id),
        kind           TEXT    NOT NULL CHECK (kind IN ('access', 'refresh')),
        expires_at     INTEGER NOT NULL,
        used_at        INTEGER                        -- a refresh token rotated; presented again, it revokes the grant
    );
    CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id);
    CREATE TABLE events_new (
        seq        INTEGER PRIMARY KEY AUTOINCREMENT,
        at         INTEGER NOT NULL,
        real_at    INTEGER NOT NULL,
        who        TEXT    NOT NULL,
        via        TEXT    NOT NULL,
        entity     TEXT    NOT NULL CHECK (entity IN ('booking', 'room', 'client', 'engineer', 'offline_window', 'reflow', 'token', 'task', 'user', 'grant')),
        entity_id  TEXT    NOT NULL,
        action     TEXT    NOT NULL,
        before     TEXT,
        after      TEXT
    );
    INSERT INTO events_new (seq, at, real_at, who, via, entity, entity_id, action, before, after)
        SELECT seq, at, real_at, who, via, entity, entity_id, action, before, after FROM events ORDER BY seq;
    DROP TABLE events;
    ALTER TABLE events_new RENAME TO events;
    CREATE INDEX events_entity ON events (entity, entity_id, seq);
    "#,
    // 14: telling people. The outbox: every change that concerns someone writes its notifications
    // in the transaction that makes the change (one row per change and destination), and a
    // delivery worker claims them after commit with a lease on the database's clock, recording
    // each attempt and when the next is due. Webhook endpoints keep their signing secret (it signs,
    // so it cannot be a hash). The studio gains the staff address for digests; the history gains
    // webhook endpoints and the studio's own settings.
    r#"
    ALTER TABLE studio ADD COLUMN notify_email TEXT;
    CREATE TABLE webhooks (
        id             TEXT    PRIMARY KEY,           -- wh_ and 40 random bits
        url            TEXT    NOT NULL,
        secret         TEXT    NOT NULL,              -- whsec_ and base64: it signs, so it is kept, never logged
        previous_secret TEXT,                         -- the secret before a rotation, still signing until previous_until
        previous_until INTEGER,                       -- unix seconds
        events         TEXT    NOT NULL,              -- JSON list of event types; [] is every type
        created_at     INTEGER NOT NULL,              -- unix seconds, real time
        disabled_at    INTEGER,                       -- a 410 disabled it
        disabled_why   TEXT,
        deleted_at     INTEGER
    );
    CREATE TABLE notifications (
        seq            INTEGER PRIMARY KEY AUTOINCREMENT,
        id             TEXT    NOT NULL UNIQUE,       -- msg_ and 80 random bits: the webhook-id, the same on every retry
        event_seq      INTEGER NOT NULL,              -- the change it tells of (events.seq)
        type           TEXT    NOT NULL,              -- booking.moved, reflow.applied, ...
        subject        TEXT    NOT NULL,              -- the booking, reflow, room or window it is about
        channel        TEXT    NOT NULL CHECK (channel IN ('webhook')),
        target         TEXT    NOT NULL,              -- the webhook's id
        payload        TEXT    NOT NULL,              -- the body sent: {"type", "timestamp", "data"}
        created_ms     INTEGER NOT NULL,
        status         TEXT    NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts       INTEGER NOT NULL DEFAULT 0,
        next_attempt_ms INTEGER NOT NULL,             -- unix ms on the database's clock
        lease_expires_ms INTEGER,                     -- claimed by a worker until then
        claimed_by     TEXT,
        last_error     TEXT,
        done_ms        INTEGER
    );
    CREATE INDEX notifications_due ON notifications (next_attempt_ms) WHERE status = 'pending';
    CREATE INDEX notifications_target ON notifications (channel, target, seq);
    CREATE TABLE notification_attempts (
        notification_seq INTEGER NOT NULL REFERENCES notifications (seq),
        attempt        INTEGER NOT NULL,
        at_ms          INTEGER NOT NULL,
        ok             INTEGER NOT NULL CHECK (ok IN (0, 1)),
        http_status    INTEGER,
        answer         TEXT,                          -- the first 500 characters of what the receiver said, or the error
        duration_ms    INTEGER NOT NULL,
        PRIMARY KEY (notification_seq, attempt)
    );
    CREATE TABLE events_new (
        seq        INTEGER PRIMARY KEY AUTOINCREMENT,
        at         INTEGER NOT NULL,
        real_at    INTEGER NOT NULL,
        who        TEXT    NOT NULL,
        via        TEXT    NOT NULL,
        entity     TEXT    NOT NULL CHECK (entity IN ('booking', 'room', 'client', 'engineer', 'offline_window', 'reflow', 'token', 'task', 'user', 'grant', 'webhook', 'studio')),
        entity_id  TEXT    NOT NULL,
        action     TEXT    NOT NULL,
        before     TEXT,
        after      TEXT
    );
    INSERT INTO events_new (seq, at, real_at, who, via, entity, entity_id, action, before, after)
        SELECT seq, at, real_at, who, via, entity, entity_id, action, before, after FROM events ORDER BY seq;
    DROP TABLE events;
    ALTER TABLE events_new RENAME TO events;
    CREATE INDEX events_entity ON events (entity, entity_id, seq);
    "#,
    // 15: the studio's week (issue 25). An engineer's working hours (a JSON list of lines, as a
    // room's opening hours; NULL: always), and their time off, rows of their own that a month's
    // reflow reads as they are. Their events are the engineer's ('time off added'/'removed').
    // A room's booking rules, each NULL when it has none. Prices: the studio's currency, deposit
    // and waitlist hold (its settings, in the studio's row), rooms' and engineers' hourly rates in
    // minor units, rooms' time-of-week overrides as JSON. (The history's `studio` entity came in 14.)
    r#"
    ALTER TABLE studio ADD COLUMN currency TEXT NOT NULL DEFAULT 'EUR';
    ALTER TABLE studio ADD COLUMN deposit_percent INTEGER NOT NULL DEFAULT 50 CHECK (deposit_percent BETWEEN 0 AND 100);
    ALTER TABLE studio ADD COLUMN waitlist_hold_hours INTEGER NOT NULL DEFAULT 24 CHECK (waitlist_hold_hours BETWEEN 1 AND 168);
    ALTER TABLE rooms ADD COLUMN hourly_rate INTEGER NOT NULL DEFAULT 0 CHECK (hourly_rate >= 0);
    ALTER TABLE rooms ADD COLUMN rates TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE engineers ADD COLUMN hourly_rate INTEGER NOT NULL DEFAULT 0 CHECK (hourly_rate >= 0);
    ALTER TABLE engineers ADD COLUMN working_hours TEXT;
    ALTER TABLE rooms ADD COLUMN min_minutes INTEGER;
    ALTER TABLE rooms ADD COLUMN max_minutes INTEGER;
    ALTER TABLE rooms ADD COLUMN lead_minutes INTEGER;
    ALTER TABLE rooms ADD COLUMN max_advance_days INTEGER;
    ALTER TABLE rooms ADD COLUMN start_step_minutes INTEGER;
    CREATE TABLE time_off (
        id          INTEGER PRIMARY KEY,
        engineer_id TEXT    NOT NULL REFERENCES engineers(id),
        from_at     INTEGER NOT NULL,
        to_at       INTEGER NOT NULL,
        reason      TEXT    NOT NULL,
        created_at  INTEGER NOT NULL,
        CHECK (to_at > from_at)
    );
    CREATE INDEX time_off_engineer ON time_off (engineer_id, from_at);
    "#,
    // 16: e-mail (issue 24). Notifications gain the `email` channel (SQLite rebuilds the outbox's
    // two tables to widen the CHECK; the attempts are rebuilt too, as they refer to the rows),
    // and clients and engineers a `notify` flag: 0 turns their e-mail off, their address stays.
    r#"
    CREATE TABLE notifications_new (
        seq            INTEGER PRIMARY KEY AUTOINCREMENT,
        id             TEXT    NOT NULL UNIQUE,
        event_seq      INTEGER NOT NULL,
        type           TEXT    NOT NULL,
        subject        TEXT    NOT NULL,
        channel        TEXT    NOT NULL CHECK (channel IN ('webhook', 'email')),
        target         TEXT    NOT NULL,              -- the webhook's id, or the e-mail address
        payload        TEXT    NOT NULL,              -- a webhook's body; an e-mail's facts as JSON (src/notify/mail.rs renders them)
        created_ms     INTEGER NOT NULL,
        status         TEXT    NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts       INTEGER NOT NULL DEFAULT 0,
        next_attempt_ms INTEGER NOT NULL,
        lease_expires_ms INTEGER,
        claimed_by     TEXT,
        last_error     TEXT,
        done_ms        INTEGER
    );
    CREATE TABLE notification_attempts_new (
        notification_seq INTEGER NOT NULL REFERENCES notifications_new (seq),
        attempt        INTEGER NOT NULL,
        at_ms          INTEGER NOT NULL,
        ok             INTEGER NOT NULL CHECK (ok IN (0, 1)),
        http_status    INTEGER,
        answer         TEXT,
        duration_ms    INTEGER NOT NULL,
        PRIMARY KEY (notification_seq, attempt)
    );
    INSERT INTO notifications_new SELECT seq, id, event_seq, type, subject, channel, target, payload, created_ms, status, attempts,
        next_attempt_ms, lease_expires_ms, claimed_by, last_error, done_ms FROM notifications ORDER BY seq;
    INSERT INTO notification_attempts_new SELECT notification_seq, attempt, at_ms, ok, http_status, answer, duration_ms FROM notification_attempts;
    DROP TABLE notification_attempts;
    DROP TABLE notifications;
    ALTER TABLE notifications_new RENAME TO notifications;
    ALTER TABLE notification_attempts_new RENAME TO notification_attempts;
    CREATE INDEX notifications_due ON notifications (next_attempt_ms) WHERE status = 'pending';
    CREATE INDEX notifications_target ON notifications (channel, target, seq);
    ALTER TABLE clients ADD COLUMN notify INTEGER NOT NULL DEFAULT 1 CHECK (notify IN (0, 1));
    ALTER TABLE engineers ADD COLUMN notify INTEGER NOT NULL DEFAULT 1 CHECK (notify IN (0, 1));
    "#,
    // 17: prices kept, deposits and payments, and a waitlist (issue 25). A booking keeps the price it
    // was made at (NULL: made before prices were kept), the deposit it owes and what was paid
    // (the sum of its payments, kept beside them so that every read of a booking has it); a
    // reflow's move keeps the price and records the difference it absorbed. A waitlist entry is
    // a client's wish for a time; it leaves the list when it is offered a slot or taken off.
    r#"
    ALTER TABLE bookings ADD COLUMN price INTEGER CHECK (price >= 0);
    ALTER TABLE bookings ADD COLUMN deposit_due INTEGER NOT NULL DEFAULT 0 CHECK (deposit_due >= 0);
    ALTER TABLE bookings ADD COLUMN paid INTEGER NOT NULL DEFAULT 0 CHECK (paid >= 0);
    CREATE TABLE payments (
        id          INTEGER PRIMARY KEY,
        booking_id  TEXT    NOT NULL REFERENCES bookings(id),
        amount      INTEGER NOT NULL CHECK (amount > 0),
        reference   TEXT,
        at          INTEGER NOT NULL,
        created_at  INTEGER NOT NULL
    );
    CREATE INDEX payments_booking ON payments (booking_id);
    ALTER TABLE reflows ADD COLUMN absorbed INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE reflow_moves ADD COLUMN price_difference INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE waitlist (
        id               INTEGER PRIMARY KEY,
        client_id        TEXT    NOT NULL REFERENCES clients(id),
        from_at          INTEGER NOT NULL,
        to_at            INTEGER NOT NULL,
        duration_minutes INTEGER NOT NULL CHECK (duration_minutes > 0),
        room_id          TEXT    REFERENCES rooms(id),
        requires         TEXT    NOT NULL DEFAULT '[]',
        engineer_id      TEXT    REFERENCES engineers(id),
        joined_at        INTEGER NOT NULL,
        CHECK (to_at > from_at)
    );
    CREATE INDEX waitlist_span ON waitlist (to_at, id);
    "#,
    // 18: reflow around people (issue 26): what any engineer of a session must be able to do, and the
    // engineer each reflow move took a session from and gave it to (NULL in moves recorded before
    // this: their engineer never changed).
    r#"
    ALTER TABLE bookings ADD COLUMN engineer_skills TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE reflow_moves ADD COLUMN from_engineer TEXT;
    ALTER TABLE reflow_moves ADD COLUMN to_engineer TEXT;
    "#,
    // 19: the version of what connections keep (the studio, its rooms, its webhooks: read by every
    // request, changed rarely), bumped in the transaction of any change of them, so that every
    // connection of every process knows when to read them again (`db::Connection::cached`).
    r#"
    CREATE TABLE cache_version (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);
    INSERT INTO cache_version (id, version) VALUES (1, 0);
    CREATE TRIGGER studio_cached_insert AFTER INSERT ON studio BEGIN UPDATE cache_version SET version = version + 1 WHERE id = 1; END;
    CREATE TRIGGER studio_cached_update AFTER UPDATE ON studio BEGIN UPDATE cache_version SET version = version + 1 WHERE id = 1; END;
    CREATE TRIGGER studio_cached_delete AFTER DELETE ON studio BEGIN UPDATE cache_version SET version = version + 1 WHERE id = 1; END;
    CREATE TRIGGER rooms_cached_insert AFTER INSERT ON rooms BEGIN UPDATE cache_version SET version = version + 1 WHERE id = 1; END;
    CREATE TRIGGER rooms_cached_update AFTER UPDATE ON rooms BEGIN UPDATE cache_version SET version = version + 1 WHERE id = 1; END;
    CREATE TRIGGER rooms_cached_delete AFTER DELETE ON rooms BEGIN UPDATE cache_version SET version = version + 1 WHERE id = 1; END;
    CREATE TRIGGER webhooks_cached_insert AFTER INSERT ON webhooks BEGIN UPDATE cache_version SET version = version + 1 WHERE id = 1; END;
    CREATE TRIGGER webhooks_cached_update AFTER UPDATE ON webhooks BEGIN UPDATE cache_version SET version = version + 1 WHERE id = 1; END;
    CREATE TRIGGER webhooks_cached_delete AFTER DELETE ON webhooks BEGIN UPDATE cache_version SET version = version + 1 WHERE id = 1; END;
    "#,
    // 20: the longest booking ever written, in seconds: a booking that overlaps an instant began
    // at most this long before it, so the overlap reads scan the index on start_at over that
    // much rather than over the longest a booking may be (a day). Only ever grows (a booking
    // shortened or cancelled leaves it), so it is an upper bound whatever is read with it. A
    // migration that rebuilds `bookings` must create these triggers again.
    r#"
    CREATE TABLE booking_bounds (id INTEGER PRIMARY KEY CHECK (id = 1), longest INTEGER NOT NULL);
    INSERT INTO booking_bounds (id, longest) SELECT 1, COALESCE(MAX(end_at - start_at), 0) FROM bookings;
    CREATE TRIGGER bookings_longest_insert AFTER INSERT ON bookings
        WHEN NEW.end_at - NEW.start_at > (SELECT longest FROM booking_bounds WHERE id = 1)
        BEGIN UPDATE booking_bounds SET longest = NEW.end_at - NEW.start_at WHERE id = 1; END;
    CREATE TRIGGER bookings_longest_update AFTER UPDATE OF start_at, end_at ON bookings
        WHEN NEW.end_at - NEW.start_at > (SELECT longest FROM booking_bounds WHERE id = 1)
        BEGIN UPDATE booking_bounds SET longest = NEW.end_at - NEW.start_at WHERE id = 1; END;
    "#,
    // 21: the busy reads of a free-slot search (`read::busy_between`) from an index that holds
    // every column they read, of the bookings that hold their place, so that a search steps
    // through one index instead of looking each booking up in the table. (The index holds the
    // columns of its own condition too: SQLite counts an index covering only if it has every
    // column the statement names.)
    r#"
    CREATE INDEX bookings_busy ON bookings (start_at, end_at, room_id, client_id, engineer_id, status, displaced)
        WHERE status != 'cancelled' AND displaced = 0;
    "#,
    // 22: a change number on every booking, so that a server can keep the bookings in memory and
    // read only what changed since it last looked (`mirror.rs`). The clock counts every insert,
    // update and deletion of a booking; a deletion (which the store never makes, but an
    // administrator's SQL may) leaves its sequence number in `bookings_gone`. A migration that
    // rebuilds `bookings` must create these triggers again.
    r#"
    CREATE TABLE booking_clock (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL);
    INSERT INTO booking_clock (id, n) VALUES (1, 0);
    CREATE TABLE bookings_gone (seq INTEGER NOT NULL, changed INTEGER NOT NULL);
    CREATE INDEX bookings_gone_changed ON bookings_gone (changed);
    ALTER TABLE bookings ADD COLUMN changed INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX bookings_changed ON bookings (changed);
    CREATE TRIGGER bookings_changed_insert AFTER INSERT ON bookings BEGIN
        UPDATE booking_clock SET n = n + 1 WHERE id = 1;
        UPDATE bookings SET changed = (SELECT n FROM booking_clock WHERE id = 1) WHERE seq = NEW.seq;
    END;
    CREATE TRIGGER bookings_changed_update AFTER UPDATE ON bookings WHEN NEW.changed IS OLD.changed BEGIN
        UPDATE booking_clock SET n = n + 1 WHERE id = 1;
        UPDATE bookings SET changed = (SELECT n FROM booking_clock WHERE id = 1) WHERE seq = NEW.seq;
    END;
    CREATE TRIGGER bookings_changed_delete AFTER DELETE ON bookings BEGIN
        UPDATE booking_clock SET n = n + 1 WHERE id = 1;
        INSERT INTO bookings_gone (seq, changed) SELECT OLD.seq, n FROM booking_clock WHERE id = 1;
    END;
    "#,
    // 23: nothing on SQLite. On PostgreSQL a new booking's change number, occupancy and bound are
    // written by one row trigger, or by the insert itself when it brings its change number
    // (migrations_postgres.sql), where they took three triggers in PL/pgSQL.
    "-- nothing on SQLite",
    // 24: the offline windows join what connections keep: a free-slot search and a booking's
    // rules read them on every call, and a studio changes them rarely.
    r#"
    CREATE TRIGGER offline_windows_cached_insert AFTER INSERT ON offline_windows BEGIN UPDATE cache_version SET version = version + 1 WHERE id = 1; END;
    CREATE TRIGGER offline_windows_cached_update AFTER UPDATE ON offline_windows BEGIN UPDATE cache_version SET version = version + 1 WHERE id = 1; END;
    CREATE TRIGGER offline_windows_cached_delete AFTER DELETE ON offline_windows BEGIN UPDATE cache_version SET version = version + 1 WHERE id = 1; END;
    "#,
];

/// The schema version this build writes.
pub const LATEST: i64 = MIGRATIONS.len() as i64;

/// PostgreSQL's migrations: the sections of `migrations_postgres.sql` in order, each as its
/// title line ("1: the studio, ...") and its SQL.
fn postgres_migrations() -> Vec<(&'static str, &'static str)> {
    const FILE: &str = include_str!("migrations_postgres.sql");
    FILE.split("\n-- ===== ").skip(1).map(|section| section.split_once('\n').unwrap_or((section, ""))).collect()
}

/// A key of PostgreSQL's advisory locks for migrating, database-wide: `CREATE EXTENSION` and
/// the catalog are shared by every schema of a database (ASCII "sfmg").
const MIGRATION_LOCK: i64 = 0x7366_6d67;

/// The version the database is at.
pub fn version(conn: &Connection) -> Result<i64, MigrationError> {
    Ok(match conn.backend() {
        Backend::Sqlite => conn.query_row("PRAGMA user_version", (), |row| row.get(0))?,
        Backend::Postgres => {
            let exists: i64 = conn.query_row("SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'studioflow_schema'", (), |row| row.get(0))?;
            if exists == 0 { 0 } else { conn.query_row("SELECT version FROM studioflow_schema WHERE id = 1", (), |row| row.get(0))? }
        }
    })
}

/// Runs the migrations after the database's version, up to `target`, and returns the version the
/// database is at then. A database already there is only read: no write lock is taken to open
/// it. Each step re-reads the version inside its write transaction, so two processes opening one
/// new database at once never run a migration twice.
pub fn migrate_to(conn: &Connection, target: i64) -> Result<i64, MigrationError> {
    let found = version(conn)?;
    if found > LATEST {
        return Err(MigrationError::Newer { found, latest: LATEST });
    }
    if found >= target.min(LATEST) {
        return Ok(found);
    }
    let postgres = postgres_migrations();
    loop {
        let tx = match conn.backend() {
            Backend::Sqlite => conn.transaction()?,
            Backend::Postgres => {
                let tx = conn.transaction()?;
                conn.query_row("SELECT pg_advisory_xact_lock(?1)::text", [MIGRATION_LOCK], |_| Ok(()))?;
                conn.execute_batch(
                    "CREATE TABLE IF NOT EXISTS studioflow_schema (id BIGINT PRIMARY KEY CHECK (id = 1), version BIGINT NOT NULL); \
                     INSERT INTO studioflow_schema (id, version) VALUES (1, 0) ON CONFLICT (id) DO NOTHING",
                )?;
                tx
            }
        };
        let version = version(&tx)?;
        if version > LATEST {
            return Err(MigrationError::Newer { found: version, latest: LATEST });
        }
        if version >= target.min(LATEST) {
            return Ok(version);
        }
        match conn.backend() {
            Backend::Sqlite => {
                tx.execute_batch(MIGRATIONS[version as usize])?;
                tx.execute_batch(&format!("PRAGMA user_version = {}", version + 1))?;
            }
            Backend::Postgres => {
                tx.execute_batch(postgres[version as usize].1)?;
                tx.execute("UPDATE studioflow_schema SET version = ?1 WHERE id = 1", [version + 1])?;
            }
        }
        tx.commit()?;
        tracing::debug!(version = version + 1, "migrated the schema");
    }
}

#[derive(Debug, thiserror::Error)]
pub enum MigrationError {
    #[error("the database is at schema version {found}, newer than this studioflow ({latest}): upgrade studioflow")]
    Newer { found: i64, latest: i64 },
    #[error(transparent)]
    Database(#[from] db::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgresql_has_one_section_per_migration_in_order() {
        let sections = postgres_migrations();
        assert_eq!(sections.len(), MIGRATIONS.len());
        for (i, (title, sql)) in sections.iter().enumerate() {
            assert!(title.starts_with(&format!("{}: ", i + 1)), "section {} is titled {title:?}", i + 1);
            assert!(sql.contains(';'), "section {title:?} holds no statement");
        }
    }
}
