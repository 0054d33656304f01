//! The studio's staff address for notifications (`notify_email`, schema 14): where the digest of
//! each reflow goes, read and changed with the studio's other settings. A change is an event of
//! the studio in the history, with the address before and after.

use super::db::params;
use super::events::{self, Action, Entity};
use super::{clean_text, Result, Store, Writer};
use crate::domain::TextKind;
use serde_json::json;

impl Store {
    /// The studio's staff address, if one is set.
    pub fn notify_email(&self) -> Result<Option<String>> {
        Ok(self.conn().query_row("SELECT notify_email FROM studio WHERE id = 1", (), |row| row.get(0))?)
    }
}

impl Writer<'_> {
    /// Sets the studio's staff address (an empty text clears it) and records the change; returns
    /// it as it now is.
    pub fn set_notify_email(&mut self, email: &str) -> Result<Option<String>> {
        self.studio()?;
        let email = clean_text("notify_email", TextKind::Email, email)?;
        let email = (!email.is_empty()).then_some(email);
        let before: Option<String> = self.tx.query_row("SELECT notify_email FROM studio WHERE id = 1", (), |row| row.get(0))?;
        self.tx.execute("UPDATE studio SET notify_email = ? WHERE id = 1", params![email])?;
        let change = events::diff(Some(events::fields([("notify_email", json!(before))])), Some(events::fields([("notify_email", json!(email))])));
        if !change.is_empty() {
            self.event(Entity::Studio, "studio", Action::Updated, change)?;
        }
        Ok(email)
    }
}
