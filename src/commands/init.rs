//! `studioflow init`: a new database holding the demo studio or a studio's own files, all or nothing.

use super::{remove_database, CommandError, CommandResult};
use crate::demo;
use crate::store::{Store, Target};
use anyhow::{anyhow, Context};
use std::path::Path;

/// `init`: creates a new database holding the demo studio or the studio of the given files.
pub fn init(db: &Target, demo: bool, studio: Option<&Path>, bookings: Option<&Path>) -> CommandResult {
    let read = |path: &Path| {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display())).map_err(CommandError::Input)
    };
    let (studio_text, bookings_text) = match (demo, studio) {
        (true, _) => (demo::STUDIO_TOML.to_owned(), Some(demo::BOOKINGS_TOML.to_owned())),
        (false, Some(path)) => (read(path)?, bookings.map(read).transpose()?),
        (false, None) => return Err(CommandError::Input(anyhow!("give --demo or --studio FILE"))),
    };
    let existed = db.file().is_none_or(Path::exists);
    let mut store = Store::open(db).with_context(|| format!("opening {db}")).map_err(CommandError::Failed)?;
    if store.studio().is_ok() {
        let new = if db.file().is_some() { "a new file" } else { "a new database or schema" };
        return Err(CommandError::Input(anyhow!("{db} already holds a studio: choose {new}")));
    }
    match demo::load(&mut store, &studio_text, bookings_text.as_deref()) {
        Ok(loaded) => {
            println!(
                "Created {}: {} rooms, {} clients, {} engineers, {} bookings ({} series), {} offline windows.",
                db, loaded.rooms, loaded.clients, loaded.engineers, loaded.bookings, loaded.series, loaded.offline_windows
            );
            Ok(())
        }
        Err(e) => {
            // The load is one transaction, so nothing of it was written; a file we created is removed.
            drop(store);
            if let Some(file) = db.file().filter(|_| !existed) {
                remove_database(file);
            }
            Err(CommandError::Input(e))
        }
    }
}


/// `init --example FILE`: writes the commented starter studio, never over an existing file.
pub fn write_example(file: &Path) -> CommandResult {
    let mut out = match std::fs::OpenOptions::new().write(true).create_new(true).open(file) {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(CommandError::Input(anyhow!("{} exists already: give a new file name (nothing was written)", file.display())));
        }
        Err(e) => return Err(CommandError::Input(anyhow::Error::new(e).context(format!("creating {}", file.display())))),
    };
    std::io::Write::write_all(&mut out, demo::EXAMPLE_TOML.as_bytes()).with_context(|| format!("writing {}", file.display())).map_err(CommandError::Failed)?;
    eprintln!(
        "Wrote a starter studio to {}: edit it, then `studioflow init --db studio.db --studio {}`.",
        file.display(),
        file.display()
    );
    Ok(())
}
