//! `studioflow init`: a new database holding the demo studio or a studio's own files, all or nothing.

use super::{remove_database, CommandError, CommandResult};
use crate::demo;
use crate::store::Store;
use anyhow::{anyhow, Context};
use std::path::Path;

/// `init`: creates a new database holding the demo studio or the studio of the given files.
pub fn init(db: &Path, demo: bool, studio: Option<&Path>, bookings: Option<&Path>) -> CommandResult {
    let read = |path: &Path| {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display())).map_err(CommandError::Input)
    };
    let (studio_text, bookings_text) = match (demo, studio) {
        (true, _) => (demo::STUDIO_TOML.to_owned(), Some(demo::BOOKINGS_TOML.to_owned())),
        (false, Some(path)) => (read(path)?, bookings.map(read).transpose()?),
        (false, None) => return Err(CommandError::Input(anyhow!("give --demo or --studio FILE"))),
    };
    let existed = db.exists();
    let mut store = Store::open(db).with_context(|| format!("opening {}", db.display())).map_err(CommandError::Failed)?;
    if store.studio().is_ok() {
        return Err(CommandError::Input(anyhow!("{} already holds a studio: choose a new file", db.display())));
    }
    match demo::load(&mut store, &studio_text, bookings_text.as_deref()) {
        Ok(loaded) => {
            println!(
                "Created {}: {} rooms, {} clients, {} engineers, {} bookings ({} series), {} offline windows.",
                db.display(), loaded.rooms, loaded.clients, loaded.engineers, loaded.bookings, loaded.series, loaded.offline_windows
            );
            Ok(())
        }
        Err(e) => {
            // The load is one transaction, so nothing of it was written; a file we created is removed.
            drop(store);
            if !existed {
                remove_database(db);
            }
            Err(CommandError::Input(e))
        }
    }
}

