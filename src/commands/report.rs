//! `studioflow report`: the studio's view (a month's timeline, and a reflow's review when one is
//! named) written as one self-contained HTML page with its data embedded, for a person to open or
//! attach to an email. The data and the page come from `crate::view`; this file checks the flags
//! and writes the file.

use crate::store::Target;
use super::{open_existing, CommandError, CommandResult};
use crate::view;
use anyhow::anyhow;
use std::path::Path;

/// `report`: writes the view of `month` (and of reflow `reflow`, if given) to `out`.
pub fn report(db: &Target, month: Option<&str>, reflow: Option<&str>, out: &Path) -> CommandResult {
    // The month is checked where it is read (`Month::parse`: exactly YYYY-MM), as for the tools.
    if month.is_none() && reflow.is_none() {
        return Err(CommandError::Input(anyhow!("give --month YYYY-MM, or --reflow ID to show a reflow's month")));
    }
    let store = open_existing(db)?;
    let data = view::build(&store, month, reflow)?;
    let page = view::page(&data)?;
    write_page(out, &page)?;
    println!("Wrote {} ({} bookings{}).", out.display(), data.bookings.len(), data.reflow.as_ref().map_or(String::new(), |r| format!(", reflow {}", r.reflow_id)));
    Ok(())
}

/// Writes a page, naming the file when it cannot be written (exit 1: the input was fine).
pub(super) fn write_page(out: &Path, page: &str) -> CommandResult {
    std::fs::write(out, page).map_err(|e| CommandError::Failed(anyhow!("cannot write {}: {e}", out.display())))
}
