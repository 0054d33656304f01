//! `studioflow list rooms|clients|engineers`: the ids an error or a tool asks for, without a
//! client. Text for people (one line each: id, name and what matters when booking), or `--json`
//! for scripts, with the same field names as the tools' answers.

use super::{open_existing, CommandResult};
use crate::store::{PersonKind, PersonQuery, Target};
use serde_json::json;
use std::io::Write;

/// What to list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    Rooms,
    Clients,
    Engineers,
}

/// `list`: the studio's rooms, clients or engineers, by id.
pub fn list(db: &Target, what: Listing, as_json: bool) -> CommandResult {
    let store = open_existing(db)?;
    let mut out = std::io::stdout().lock();
    let rows: Vec<(serde_json::Value, String)> = match what {
        Listing::Rooms => store
            .rooms()?
            .into_iter()
            .map(|room| {
                let hours = room.hours.to_lines();
                let line = format!(
                    "{}\t{}\t{} people\t{}\t{}{}",
                    room.id,
                    room.name,
                    room.capacity,
                    if room.features.is_empty() { "-".to_owned() } else { room.features.join(",") },
                    hours.join("; "),
                    if room.active { "" } else { "\tretired" }
                );
                let value = json!({
                    "id": room.id.as_str(),
                    "name": room.name,
                    "capacity": room.capacity,
                    "features": room.features,
                    "opening_hours": hours,
                    "buffer_minutes": room.buffer.num_minutes(),
                    "active": room.active,
                });
                (value, line)
            })
            .collect(),
        Listing::Clients | Listing::Engineers => {
            let kind = if what == Listing::Clients { PersonKind::Client } else { PersonKind::Engineer };
            let query = PersonQuery { limit: usize::MAX, ..PersonQuery::default() };
            store
                .people(kind, &query)?
                .into_iter()
                .map(|p| {
                    let mut line = format!("{}\t{}", p.id, p.name);
                    if let Some(email) = &p.profile.email {
                        line += &format!("\t{email}");
                    }
                    if kind == PersonKind::Engineer && !p.profile.skills.is_empty() {
                        line += &format!("\t{}", p.profile.skills.join(","));
                    }
                    if !p.profile.active {
                        line += "\tinactive";
                    }
                    let mut value = json!({
                        "id": p.id,
                        "name": p.name,
                        "email": p.profile.email,
                        "phone": p.profile.phone,
                        "active": p.profile.active,
                    });
                    if kind == PersonKind::Engineer {
                        value["skills"] = json!(p.profile.skills);
                    }
                    (value, line)
                })
                .collect()
        }
    };
    if as_json {
        writeln!(out, "{}", serde_json::Value::Array(rows.into_iter().map(|(value, _)| value).collect()))?;
    } else if rows.is_empty() {
        let noun = match what {
            Listing::Rooms => "rooms",
            Listing::Clients => "clients",
            Listing::Engineers => "engineers",
        };
        eprintln!("No {noun} yet: add them with the create tools over MCP, or in a studio file (`studioflow init --example`).");
    } else {
        for (_, line) in rows {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}
