//! A handful of open connections to one studio's database, so that a server does not pay for
//! opening a connection on every request. The pooling itself is r2d2's; this file says how a
//! connection is made (a plain [`Store`], schema brought up to date), hands one out at a time,
//! and drops one found lost. It is also the one place where work cut short by a lost connection
//! is done again: once, on a fresh connection, when nothing of it may have been committed.

use super::db::combine::Combiner;
use super::{Mirror, Result, Store, StoreError, Target};
use std::sync::Arc;

/// How the pool makes and checks connections.
struct Manager {
    target: Target,
    /// The bookings in memory, shared by every connection of the pool.
    mirror: Arc<Mirror>,
    /// The group commit of the pool's bookings (PostgreSQL).
    combiner: Arc<Combiner>,
}

impl r2d2::ManageConnection for Manager {
    type Connection = Store;
    type Error = StoreError;

    fn connect(&self) -> Result<Store> {
        let mut store = Store::open(&self.target)?;
        store.share_mirror(&self.mirror);
        store.share_combiner(&self.combiner);
        Ok(store)
    }

    /// Not called: the pool checks a connection itself as it hands it out ([`Pool::checked`]),
    /// the way the work needs it.
    fn is_valid(&self, store: &mut Store) -> Result<()> {
        store.is_alive()
    }

    fn has_broken(&self, store: &mut Store) -> bool {
        store.is_broken()
    }
}

/// Open connections to one studio's database.
pub struct Pool {
    target: Target,
    inner: r2d2::Pool<Manager>,
    /// How many connections it keeps: as many as may be found lost at once.
    size: u32,
}

impl Pool {
    /// Opens the database (creating the file and the schema if needed), keeping up to `size`
    /// connections.
    pub fn open(target: impl Into<Target>, size: u32) -> Result<Pool> {
        let target = target.into();
        // The first connection is made here, so that a database that cannot be opened fails at
        // once with its own error rather than as a pool time-out.
        let first = Store::open(&target)?;
        drop(first);
        let manager = Manager { target: target.clone(), mirror: Arc::default(), combiner: Arc::default() };
        let inner = r2d2::Pool::builder()
            .max_size(size.max(1))
            .min_idle(Some(1))
            .connection_timeout(std::time::Duration::from_secs(30))
            .test_on_check_out(false)
            .build(manager)
            .map_err(|e| StoreError::Pool(e.to_string()))?;
        Ok(Pool { target, inner, size: size.max(1) })
    }

    /// A connection of its own, outside the pool, for point reads made inline on an async
    /// worker (the HTTP gate's token checks), where the backend allows that: an SQLite file read
    /// takes microseconds and never waits for a writer in WAL mode. `None` on PostgreSQL, whose
    /// client must not run on an async worker: read through the pool on a blocking thread there.
    pub fn inline_reader(&self) -> Result<Option<Store>> {
        match &self.target {
            Target::File(_) => Store::open(&self.target).map(Some),
            Target::Postgres(_) => Ok(None),
        }
    }

    /// The database the pool connects to.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Runs `f` on a connection of the pool. Blocking: call it from a blocking thread.
    ///
    /// A lost connection is a transient fault. If the connection is lost while `f` runs and
    /// nothing it sent may have been committed (every write of a transaction that never reached
    /// COMMIT is undone by the server), what `f` returned is dropped and `f` runs once more on a
    /// fresh connection; so `f` must be safe to run twice, which work that only reads and writes
    /// the database is. A connection lost at or after a commit is `f`'s to report
    /// ([`StoreError::OutcomeUnknown`]): whether the commit took effect is unknown.
    pub fn with<T>(&self, mut f: impl FnMut(&mut Store) -> T) -> Result<T> {
        // Another connection may have changed the studio's settings since this one read them.
        self.run(false, &mut |store| store.refresh_studio().map(|()| f(store)))?
    }

    /// [`Pool::with`] for work that writes (a booking): on PostgreSQL the connection's check as it
    /// is handed out is the write transaction's `BEGIN`, which the work's first write takes over
    /// (one round trip for both; see [`Store::is_alive_writing`]), and the studio's settings are
    /// read under the writer's lock. Work that ends without writing has its transaction rolled
    /// back.
    pub fn with_writing<T>(&self, mut f: impl FnMut(&mut Store) -> T) -> Result<T> {
        self.run(true, &mut |store| store.refresh_studio().map(|()| f(store)))?
    }

    /// [`Pool::with`] for work that reads none of the studio's settings (checking an API token
    /// on every HTTP request, renewing a task's lease): the settings are not re-read first.
    pub fn with_unsettled<T>(&self, mut f: impl FnMut(&mut Store) -> T) -> Result<T> {
        self.run(false, &mut |store| f(store))
    }

    fn run<T>(&self, writing: bool, f: &mut dyn FnMut(&mut Store) -> T) -> Result<T> {
        // Work that writes finds a lost connection only as it runs (its check is the BEGIN that
        // its first statement takes along: `Connection::begin_early`), so it may meet every
        // connection of a restarted server before a fresh one.
        let mut again = if writing { self.size + 1 } else { 1 };
        // Each connection finds a change of the cached values once (and then knows it).
        let mut changed = self.size + 1;
        loop {
            let mut store = self.checked(writing)?;
            let outcome = f(&mut store);
            store.end_use();
            // The lost connection goes back marked broken, and r2d2 drops it (`has_broken`).
            if store.lost_uncommitted() && again > 0 {
                again -= 1;
                tracing::info!("the database connection was lost before anything was committed: running the work again on a fresh connection");
                continue;
            }
            if store.changed_meanwhile() && changed > 0 {
                changed -= 1;
                tracing::debug!("the studio's settings or rooms changed as the work began: running it again on what they are now");
                continue;
            }
            return Ok(outcome);
        }
    }

    /// A connection that answered its check ([`Store::is_alive`], or for work that writes
    /// [`Store::is_alive_writing`]), its use begun. One that fails it is dropped and another
    /// taken, as many times as the pool has connections (a restarted server leaves them all lost);
    /// then the check's error is returned.
    fn checked(&self, writing: bool) -> Result<r2d2::PooledConnection<Manager>> {
        let mut failed = 0;
        loop {
            let store = self.inner.get().map_err(|e| StoreError::Pool(e.to_string()))?;
            store.begin_use();
            let check = if writing { store.is_alive_writing() } else { store.is_alive() };
            match check {
                Ok(()) => return Ok(store),
                Err(e) => {
                    store.end_use();
                    store.discard();
                    failed += 1;
                    if failed > self.size {
                        return Err(e);
                    }
                }
            }
        }
    }
}
