//! `studioflow export-instance`: a month of a database as a REFLOW.md instance, on stdout.

use crate::store::Target;
use super::{open_existing, parse_request, CommandError, CommandResult};
use crate::reflow;
use std::io::Write;

/// `export-instance`: prints the month as a REFLOW.md instance.
pub fn export_instance(db: &Target, month: &str, offline: &[String], max_shift_minutes: i64) -> CommandResult {
    let store = open_existing(db)?;
    let request = parse_request(month, offline, max_shift_minutes)?;
    let export = reflow::export_instance(&store, &request)?;
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &export.instance).map_err(|e| CommandError::Failed(e.into()))?;
    writeln!(out)?;
    Ok(())
}

