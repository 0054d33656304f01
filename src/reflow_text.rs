//! How a finished reflow is told to people: the headline (moved, unresolved, cost), how the moves
//! split between a new room, a new time and a new engineer, the sessions that changed engineer
//! (old and new), and the unresolved bookings with their reasons.
//! `demo` prints it from the store and `client` from a server's answer, so the two read the same.
//! It only formats: it reads no store and knows no protocol. (The `report` command's HTML page is
//! the view's, `src/view/`.)

use std::io::{self, Write};

/// A finished reflow, as much of it as people read.
#[derive(Debug, Clone, PartialEq)]
pub struct ReflowReport {
    pub reflow_id: String,
    pub month: String,
    /// Whether the moves were written (false for a dry run or a declined plan).
    pub applied: bool,
    pub affected: usize,
    pub cost: i64,
    pub lower_bound: Option<i64>,
    /// The price difference its moves absorbed, in minor units (each moved booking keeps its price).
    pub absorbed: i64,
    pub moves: Vec<MoveLine>,
    pub unresolved: Vec<UnresolvedLine>,
}

/// One move of the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct MoveLine {
    pub booking: String,
    pub from_room: String,
    pub to_room: String,
    /// Whether the booking starts at a different time.
    pub shifted: bool,
    /// Its engineer before and after the move.
    pub from_engineer: Option<String>,
    pub to_engineer: Option<String>,
}

impl MoveLine {
    /// Whether the move gives the session to another engineer.
    pub fn changes_engineer(&self) -> bool {
        self.from_engineer != self.to_engineer
    }
}

/// A booking the reflow left where it was.
#[derive(Debug, Clone, PartialEq)]
pub struct UnresolvedLine {
    pub booking: String,
    /// When, where and whose it is, when the printer knows ("Tue 8 Sep 2026 11:00-12:30  studio-b  Amara Osei (party of 1)").
    pub detail: Option<String>,
    pub reason: String,
}

impl ReflowReport {
    /// "Reflow rf_0001: 141 affected bookings; moved 124, unresolved 17. Cost 17480 (proven optimal)."
    /// and how the moves split.
    pub fn write_headline(&self, out: &mut impl Write) -> io::Result<()> {
        let quality = match self.lower_bound {
            Some(bound) if bound >= self.cost => "proven optimal".to_owned(),
            Some(bound) => format!("{}, lower bound {bound}", studioflow_solver::quality(self.cost, bound)),
            None => "no bound recorded".to_owned(),
        };
        writeln!(
            out,
            "Reflow {}: {} affected bookings; {} {}, unresolved {}. Cost {} ({quality}).",
            self.reflow_id,
            self.affected,
            if self.applied { "moved" } else { "would move" },
            self.moves.len(),
            self.unresolved.len(),
            self.cost
        )?;
        let same_room = self.moves.iter().filter(|m| m.to_room == m.from_room).count();
        let shifted = self.moves.iter().filter(|m| m.shifted).count();
        let staffed = self.moves.iter().filter(|m| m.changes_engineer()).count();
        // The engineers' part is said only when there is one, so a reflow of rooms reads as before.
        let staffed = if staffed == 0 { String::new() } else { format!("; {staffed} changed engineer") };
        writeln!(
            out,
            "  {} moved to another room, {} kept their room at a new time; {} start at a different time{staffed}.",
            self.moves.len() - same_room,
            same_room,
            shifted
        )?;
        if self.absorbed != 0 {
            writeln!(out, "  Price difference absorbed: {} (minor units); each moved booking keeps its price.", self.absorbed)?;
        }
        if !self.applied {
            writeln!(out, "  Not applied: no booking was moved.")?;
        }
        Ok(())
    }

    /// The sessions given to another engineer, each with its old and new engineer and rooms;
    /// nothing when there are none.
    pub fn write_engineer_changes(&self, out: &mut impl Write) -> io::Result<()> {
        let changed: Vec<&MoveLine> = self.moves.iter().filter(|m| m.changes_engineer()).collect();
        if changed.is_empty() {
            return Ok(());
        }
        writeln!(out)?;
        writeln!(out, "{} with another engineer:", if self.applied { "Moved" } else { "Would move" })?;
        let none = "no engineer";
        for m in changed {
            let (from, to) = (m.from_engineer.as_deref().unwrap_or(none), m.to_engineer.as_deref().unwrap_or(none));
            let time = if m.shifted { ", at a new time" } else { "" };
            writeln!(out, "  {}  {from} -> {to}  ({} -> {}{time})", m.booking, m.from_room, m.to_room)?;
        }
        Ok(())
    }

    /// The unresolved bookings, each with its reason; nothing when there are none.
    pub fn write_unresolved(&self, out: &mut impl Write) -> io::Result<()> {
        if self.unresolved.is_empty() {
            return Ok(());
        }
        writeln!(out)?;
        writeln!(out, "Unresolved, left where they are:")?;
        for u in &self.unresolved {
            match &u.detail {
                Some(detail) => writeln!(out, "  {}  {detail}", u.booking)?,
                None => writeln!(out, "  {}", u.booking)?,
            }
            writeln!(out, "      {}", u.reason)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(applied: bool) -> ReflowReport {
        ReflowReport {
            reflow_id: "rf_0001".into(),
            month: "2026-09".into(),
            applied,
            affected: 3,
            cost: 1003,
            lower_bound: Some(1003),
            absorbed: 0,
            moves: vec![
                MoveLine { booking: "bk_1".into(), from_room: "b".into(), to_room: "a".into(), shifted: false, from_engineer: None, to_engineer: None },
                MoveLine { booking: "bk_2".into(), from_room: "b".into(), to_room: "b".into(), shifted: true, from_engineer: None, to_engineer: None },
            ],
            unresolved: vec![UnresolvedLine { booking: "bk_3".into(), detail: None, reason: "pinned by staff".into() }],
        }
    }

    #[test]
    fn the_headline_says_the_price_difference_a_reflow_absorbed_when_there_is_one() {
        let mut out = Vec::new();
        ReflowReport { absorbed: -2000, ..report(true) }.write_headline(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("  Price difference absorbed: -2000 (minor units); each moved booking keeps its price.\n"), "{text}");
    }

    #[test]
    fn the_headline_counts_moves_and_says_when_nothing_was_applied() {
        let mut out = Vec::new();
        report(true).write_headline(&mut out).unwrap();
        report(true).write_unresolved(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "Reflow rf_0001: 3 affected bookings; moved 2, unresolved 1. Cost 1003 (proven optimal).\n  \
             1 moved to another room, 1 kept their room at a new time; 1 start at a different time.\n\n\
             Unresolved, left where they are:\n  bk_3\n      pinned by staff\n"
        );
        let mut out = Vec::new();
        report(false).write_headline(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("would move 2") && text.contains("Not applied"), "{text}");
    }

    #[test]
    fn sessions_that_change_engineer_are_counted_and_listed_with_both_engineers() {
        let mut r = report(true);
        r.moves[1].from_engineer = Some("eng-03".into());
        r.moves[1].to_engineer = Some("eng-05".into());
        r.moves[0].from_engineer = Some("eng-01".into());
        r.moves[0].to_engineer = Some("eng-01".into());
        let mut out = Vec::new();
        r.write_headline(&mut out).unwrap();
        r.write_engineer_changes(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("1 start at a different time; 1 changed engineer.\n"), "{text}");
        assert!(text.ends_with("\nMoved with another engineer:\n  bk_2  eng-03 -> eng-05  (b -> b, at a new time)\n"), "{text}");
        let mut out = Vec::new();
        report(true).write_engineer_changes(&mut out).unwrap();
        assert!(out.is_empty(), "nothing when no engineer changed");
    }
}
