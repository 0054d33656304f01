//! A handful of open connections to one database file, handed out one at a time, so that a server
//! does not pay for opening a connection on every request. Each connection is a plain [`Store`];
//! the pool adds no locking of its own beyond the list of idle ones.

use super::{Result, Store};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Open connections to one file.
pub struct Pool {
    path: PathBuf,
    /// A std mutex, not an async one: it is held only to push or pop, never across I/O.
    idle: Mutex<Vec<Store>>,
    max_idle: usize,
}

impl Pool {
    /// Opens the file (creating it and its schema if needed) and keeps that first connection.
    pub fn open(path: &Path, max_idle: usize) -> Result<Pool> {
        let first = Store::open(path)?;
        Ok(Pool { path: path.to_owned(), idle: Mutex::new(vec![first]), max_idle: max_idle.max(1) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on a connection of the pool. Blocking: call it from a blocking thread.
    pub fn with<T>(&self, f: impl FnOnce(&mut Store) -> T) -> Result<T> {
        let taken = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut store = match taken {
            Some(store) => store,
            None => Store::open(&self.path)?,
        };
        // Another connection may have changed the studio's settings since this one read them.
        store.refresh_studio()?;
        let value = f(&mut store);
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < self.max_idle {
            idle.push(store);
        }
        Ok(value)
    }
}
