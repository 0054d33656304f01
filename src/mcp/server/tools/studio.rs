//! The studio's own tools: its settings (currency, deposit, waitlist hold), read and changed, and
//! a quote of what a session costs at today's rates.

use super::super::wire::*;
use super::{room_id, time, Call, ToolError};
use crate::domain::{EngineerId, StudioSettings};
use crate::store::SettingsEdit;

fn studio_out(name: &str, timezone: &str, s: &StudioSettings) -> StudioOut {
    StudioOut {
        name: name.to_owned(),
        timezone: timezone.to_owned(),
        currency: s.currency.clone(),
        deposit_percent: s.deposit_percent,
        waitlist_hold_hours: s.waitlist_hold_hours,
    }
}

pub fn get_studio(ctx: &Call<'_>, _: NoArgs) -> Result<(StudioOut, String), ToolError> {
    ctx.with(|store| {
        let studio = store.studio()?;
        let s = store.settings()?;
        let summary = format!("{} ({}): prices in {}, deposit {} %, waitlist holds {} h.", studio.name, studio.tz.name(), s.currency, s.deposit_percent, s.waitlist_hold_hours);
        Ok((studio_out(&studio.name, studio.tz.name(), &s), summary))
    })
}

pub fn update_studio(ctx: &Call<'_>, a: UpdateStudioArgs) -> Result<(StudioOut, String), ToolError> {
    if a.currency.is_none() && a.deposit_percent.is_none() && a.waitlist_hold_hours.is_none() {
        return Err(ToolError::Fix("give at least one field to change: currency, deposit_percent or waitlist_hold_hours".into()));
    }
    let edit = SettingsEdit { currency: a.currency.map(String::from), deposit_percent: a.deposit_percent, waitlist_hold_hours: a.waitlist_hold_hours };
    ctx.with(|store| {
        let studio = store.studio()?.clone();
        let s = store.write_as(&ctx.actor(), |w| w.update_settings(&edit))?;
        let summary = format!("Updated the studio: prices in {}, deposit {} %, waitlist holds {} h.", s.currency, s.deposit_percent, s.waitlist_hold_hours);
        Ok((studio_out(&studio.name, studio.tz.name(), &s), summary))
    })
}

pub fn quote(ctx: &Call<'_>, a: QuoteArgs) -> Result<(QuoteOut, String), ToolError> {
    ctx.with(|store| {
        let tz = store.studio()?.tz;
        let (start, end) = (time(&tz, "start", &a.start)?, time(&tz, "end", &a.end)?);
        let engineer = a.engineer.as_deref().map(|e| EngineerId::new(e.trim()));
        let q = store.quote(&room_id(&a.room), start, end, engineer.as_ref())?;
        let currency = store.settings()?.currency;
        let lines: Vec<QuoteLineOut> = q
            .lines
            .iter()
            .map(|l| QuoteLineOut { what: l.what.to_owned(), from: tz.format(l.from), to: tz.format(l.to), hourly_rate: l.hourly_rate, minutes: l.minutes, amount: l.amount })
            .collect();
        let summary = format!("{} {} in minor units, {} line{}.", q.total, currency, lines.len(), if lines.len() == 1 { "" } else { "s" });
        Ok((QuoteOut { total: q.total, currency, lines }, summary))
    })
}
