//! The studio's own tools: its settings (currency, deposit, waitlist hold, the staff address for
//! digests), read and changed, and a quote of what a session costs at today's rates.

use super::super::wire::*;
use super::{room_id, time, Call, ToolError};
use crate::domain::EngineerId;
use crate::store::SettingsEdit;

fn studio_out(store: &crate::store::Store) -> Result<StudioOut, ToolError> {
    let studio = store.studio()?;
    let s = store.settings()?;
    Ok(StudioOut {
        name: studio.name.clone(),
        timezone: studio.tz.name().to_owned(),
        currency: s.currency,
        deposit_percent: s.deposit_percent,
        waitlist_hold_hours: s.waitlist_hold_hours,
        notice_minutes: studio.notice.num_minutes(),
        horizon_days: studio.horizon.num_days(),
        notify_email: store.notify_email()?,
    })
}

fn told(out: &StudioOut) -> String {
    format!(
        "prices in {}, deposit {} %, waitlist holds {} h; reflow digests go to {}.",
        out.currency,
        out.deposit_percent,
        out.waitlist_hold_hours,
        out.notify_email.as_deref().unwrap_or("no one (no staff address set)")
    )
}

pub fn get_studio(ctx: &Call<'_>, _: NoArgs) -> Result<(StudioOut, String), ToolError> {
    let out = ctx.with(|store| studio_out(store))?;
    let summary = format!("{} ({}): {}", out.name, out.timezone, told(&out));
    Ok((out, summary))
}

pub fn update_studio(ctx: &Call<'_>, a: UpdateStudioArgs) -> Result<(StudioOut, String), ToolError> {
    let settings = a.currency.is_some() || a.deposit_percent.is_some() || a.waitlist_hold_hours.is_some();
    if !settings && a.notify_email.is_none() {
        return Err(ToolError::Fix("give at least one field to change: currency, deposit_percent, waitlist_hold_hours or notify_email".into()));
    }
    let edit = SettingsEdit { currency: a.currency.map(String::from), deposit_percent: a.deposit_percent, waitlist_hold_hours: a.waitlist_hold_hours };
    let out = ctx.with(|store| {
        store.write_as(&ctx.actor(), |w| {
            if settings {
                w.update_settings(&edit)?;
            }
            if let Some(email) = &a.notify_email {
                w.set_notify_email(email.as_str())?;
            }
            Ok(())
        })?;
        studio_out(store)
    })?;
    let summary = format!("Updated the studio: {}", told(&out));
    Ok((out, summary))
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

pub fn studio_report(ctx: &Call<'_>, a: StudioReportArgs) -> Result<(crate::figures::MonthFigures, String), ToolError> {
    let month = crate::reflow::Month::parse(&a.month)?;
    let figures = ctx.with(|store| Ok(crate::figures::month_figures(store, month)?))?;
    let (open, booked): (f64, f64) = figures.rooms.iter().fold((0.0, 0.0), |(o, b), r| (o + r.open_hours, b + r.booked_hours));
    let summary = format!(
        "{}: {:.1} of {:.1} open hours booked in {} rooms; revenue {} {} (minor units); deposits {} due, {} paid; {} reflow{}.",
        figures.month,
        booked,
        open,
        figures.rooms.len(),
        figures.revenue,
        figures.currency,
        figures.deposits.due,
        figures.deposits.paid,
        figures.reflows.len(),
        if figures.reflows.len() == 1 { "" } else { "s" }
    );
    Ok((figures, summary))
}
