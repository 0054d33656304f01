//! Reflow records and plans: what each reflow planned and moved (applied or not), the reflows that
//! moved a booking, and the sweep of plans never applied. The history of changes is `events.rs`.

use super::{instant, instant_at, Result, Store, StoreError, Writer};
use super::read;
use crate::domain::{BookingId, EngineerId, Move, RoomId, Session};
use chrono::{DateTime, Utc};
use super::db::{self, params, Connection, OptionalExtension};

/// A stored reflow: its request, summary, moves and unresolved bookings.
#[derive(Debug, Clone, PartialEq)]
pub struct ReflowRecord {
    pub id: String,
    pub month: String,
    /// The request as JSON, as the reflow stored it.
    pub request: serde_json::Value,
    pub created_at: DateTime<Utc>,
    pub applied: bool,
    pub affected: usize,
    pub cost: i64,
    /// The solver's proven lower bound on the cost, when it was recorded.
    pub lower_bound: Option<i64>,
    pub moves: Vec<MoveRecord>,
    pub unresolved: Vec<(BookingId, String)>,
    /// Whether it was applied and then undone.
    pub undone: bool,
    /// The price difference its moves absorbed, in minor units: the sum over its moves of what
    /// the session would cost at its new place today less the price its booking keeps (a move
    /// keeps the booked price; negative when the new places are cheaper).
    pub absorbed: i64,
}

/// One booking's move in a stored reflow.
#[derive(Debug, Clone, PartialEq)]
pub struct MoveRecord {
    pub reflow: String,
    /// Whether the reflow was applied (a dry run or an unanswered plan was not).
    pub applied: bool,
    pub moved: Move,
    /// What the session would cost at its new place less the price its booking keeps.
    pub price_difference: i64,
}

const MOVE_COLUMNS: &str =
    "m.reflow_id, m.booking_id, m.from_room, m.from_start, m.from_end, m.to_room, m.to_start, m.to_end, m.from_engineer, m.to_engineer, r.applied, m.price_difference";

fn move_from_row(row: &db::Row<'_>) -> db::Result<MoveRecord> {
    Ok(MoveRecord { reflow: row.get(0)?, applied: row.get(10)?, moved: move_at(row, 1)?, price_difference: row.get(11)? })
}

/// A move stored as nine columns from `first`: booking, from room, start and end, to room, start
/// and end, from and to engineer; the one way every query of reflow moves reads them. A move
/// recorded before engineers were (both NULL) reads as one that changed no engineer.
pub(super) fn move_at(row: &db::Row<'_>, first: usize) -> db::Result<Move> {
    Ok(Move {
        booking: BookingId(row.get(first)?),
        from_room: RoomId(row.get(first + 1)?),
        from_start: instant_at(row, first + 2)?,
        from_end: instant_at(row, first + 3)?,
        to_room: RoomId(row.get(first + 4)?),
        to_start: instant_at(row, first + 5)?,
        to_end: instant_at(row, first + 6)?,
        from_engineer: row.get::<_, Option<String>>(first + 7)?.map(EngineerId),
        to_engineer: row.get::<_, Option<String>>(first + 8)?.map(EngineerId),
    })
}

impl Store {
    pub fn reflow(&self, id: &str) -> Result<Option<ReflowRecord>> {
        reflow_in(self.conn(), id)
    }

    /// The applied reflows of a month (`YYYY-MM`), undone ones included, oldest first.
    pub fn applied_reflows(&self, month: &str) -> Result<Vec<ReflowRecord>> {
        let ids: Vec<String> = {
            let mut stmt = self.conn().prepare_cached("SELECT id FROM reflows WHERE month = ? AND applied = 1 ORDER BY id")?;
            let rows = stmt.query_map([month], |row| row.get(0))?;
            rows.collect::<db::Result<_>>()?
        };
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            out.extend(reflow_in(self.conn(), &id)?);
        }
        Ok(out)
    }
}

fn reflow_in(conn: &Connection, id: &str) -> Result<Option<ReflowRecord>> {
    {
        let head = conn
            .query_row(
                "SELECT id, month, request, created_at, applied, affected, cost, lower_bound, undone_at IS NOT NULL, absorbed FROM reflows WHERE id = ?",
                [id],
                |row| {
                    Ok((
                        (row.get::<_, String>(0)?, row.get::<_, String>(1)?, row.get::<_, String>(2)?),
                        (row.get::<_, i64>(3)?, row.get::<_, bool>(4)?, row.get::<_, i64>(5)?, row.get::<_, i64>(6)?, row.get::<_, Option<i64>>(7)?),
                        (row.get::<_, bool>(8)?, row.get::<_, i64>(9)?),
                    ))
                },
            )
            .optional()?;
        let Some(((id, month, request), (created_at, applied, affected, cost, lower_bound), (undone, absorbed))) = head else { return Ok(None) };
        let request = serde_json::from_str(&request).map_err(|e| StoreError::Corrupt(format!("the request of reflow {id}: {e}")))?;
        let moves = moves_of(conn, &id)?;
        let mut stmt = conn.prepare_cached("SELECT booking_id, reason FROM reflow_unresolved WHERE reflow_id = ? ORDER BY booking_id")?;
        let unresolved = stmt
            .query_map([&id], |row| Ok((BookingId(row.get(0)?), row.get(1)?)))?
            .collect::<db::Result<_>>()?;
        Ok(Some(ReflowRecord {
            id,
            month,
            request,
            created_at: instant(created_at)?,
            applied,
            affected: affected as usize,
            cost,
            lower_bound,
            moves,
            unresolved,
            undone,
            absorbed,
        }))
    }
}

impl Store {
    /// Deletes the plans that were never applied (dry runs, declined or expired approvals) once
    /// they are older than `ttl` at `now`, with their moves and unresolved bookings; returns how
    /// many went. A plan a task still refers to stays until the task itself is swept: the same
    /// time to live as tasks, so a dry run can be read back (`get_reflow`) as long as a task could.
    pub fn delete_expired_plans(&mut self, now: DateTime<Utc>, ttl: std::time::Duration) -> Result<usize> {
        let ttl = i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX);
        let before = now.timestamp().saturating_sub(ttl);
        self.write_with(|w| {
            Ok(w.conn().execute(
                "DELETE FROM reflows WHERE applied = 0 AND created_at <= ? \
                 AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.reflow_id = reflows.id)",
                [before],
            )?)
        })
    }

    /// Every stored reflow move of a booking, oldest first.
    pub fn booking_history(&self, booking: &BookingId) -> Result<Vec<MoveRecord>> {
        let sql = format!(
            "SELECT {MOVE_COLUMNS} FROM reflow_moves m JOIN reflows r ON r.id = m.reflow_id \
             WHERE m.booking_id = ? ORDER BY r.created_at, r.id"
        );
        collect_moves(self.conn(), &sql, [booking.as_str()])
    }
}

/// The moves of reflow `id`, by booking.
fn moves_of(conn: &Connection, id: &str) -> Result<Vec<MoveRecord>> {
    let sql = format!("SELECT {MOVE_COLUMNS} FROM reflow_moves m JOIN reflows r ON r.id = m.reflow_id WHERE m.reflow_id = ? ORDER BY m.booking_id");
    collect_moves(conn, &sql, [id])
}

fn collect_moves(conn: &Connection, sql: &str, args: impl db::Params) -> Result<Vec<MoveRecord>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map(args, move_from_row)?;
    Ok(rows.collect::<db::Result<_>>()?)
}

/// A reflow to record: its summary, and its moves and unresolved bookings.
pub struct NewReflow<'a> {
    pub month: String,
    pub request: serde_json::Value,
    pub applied: bool,
    pub affected: usize,
    pub cost: i64,
    pub lower_bound: i64,
    pub moves: &'a [Move],
    pub unresolved: Vec<(&'a BookingId, &'a str)>,
}

impl Writer<'_> {
    /// Records a reflow and returns its id (`rf_0001`, ...).
    pub fn record_reflow(&mut self, reflow: &NewReflow<'_>) -> Result<String> {
        let conn = self.conn();
        // A counter, not a count of rows: expired plans are deleted, and an id is never given twice.
        let n: i64 = conn.query_row(
            "INSERT INTO id_counters (name, last) VALUES ('reflow', 1) \
             ON CONFLICT (name) DO UPDATE SET last = id_counters.last + 1 RETURNING last",
            (),
            |row| row.get(0),
        )?;
        let id = format!("rf_{n:04}");
        // Each move keeps its booking's price; the difference to its new place is the studio's.
        let tz = self.studio()?.tz;
        let prices = super::prices::PriceList::read(conn)?;
        let mut differences = Vec::with_capacity(reflow.moves.len());
        for m in reflow.moves {
            let difference = match read::booking(conn, &m.booking)? {
                Some(b) => match b.money.price {
                    Some(kept) => {
                        let there = Session { room: m.to_room.clone(), start: m.to_start, end: m.to_end, engineer: m.to_engineer.clone(), ..b.session.clone() };
                        prices.price(&tz, &there)? - kept
                    }
                    // Booked before prices were kept: no price to keep, nothing absorbed.
                    None => 0,
                },
                None => 0,
            };
            differences.push(difference);
        }
        conn.execute(
            "INSERT INTO reflows (id, month, request, created_at, applied, affected, moved, unresolved, cost, lower_bound, absorbed) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            params![
                id,
                reflow.month,
                reflow.request.to_string(),
                Utc::now().timestamp(),
                reflow.applied,
                reflow.affected,
                reflow.moves.len(),
                reflow.unresolved.len(),
                reflow.cost,
                reflow.lower_bound,
                differences.iter().sum::<i64>()
            ],
        )?;
        let mut insert_move = conn.prepare_cached(
            "INSERT INTO reflow_moves (reflow_id, booking_id, from_room, from_start, from_end, to_room, to_start, to_end, \
             from_engineer, to_engineer, price_difference) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )?;
        for (m, difference) in reflow.moves.iter().zip(&differences) {
            insert_move.execute(params![
                id,
                m.booking.as_str(),
                m.from_room.as_str(),
                m.from_start.timestamp(),
                m.from_end.timestamp(),
                m.to_room.as_str(),
                m.to_start.timestamp(),
                m.to_end.timestamp(),
                m.from_engineer.as_ref().map(|e| e.as_str()),
                m.to_engineer.as_ref().map(|e| e.as_str()),
                difference
            ])?;
        }
        let mut insert_unresolved =
            conn.prepare_cached("INSERT INTO reflow_unresolved (reflow_id, booking_id, reason) VALUES (?, ?, ?)")?;
        for (booking, reason) in &reflow.unresolved {
            insert_unresolved.execute(params![id, booking.as_str(), reason])?;
        }
        Ok(id)
    }

    /// Marks a recorded reflow as applied (its moves were written in this transaction).
    pub fn mark_reflow_applied(&mut self, id: &str) -> Result<()> {
        self.conn().execute("UPDATE reflows SET applied = 1 WHERE id = ?", [id])?;
        Ok(())
    }

    /// A recorded reflow, if there is one, as this transaction sees it.
    pub fn find_reflow(&self, id: &str) -> Result<Option<ReflowRecord>> {
        reflow_in(self.conn(), id)
    }

    /// A recorded reflow, as this transaction sees it.
    pub fn reflow_record(&self, id: &str) -> Result<ReflowRecord> {
        reflow_in(self.conn(), id)?.ok_or_else(|| StoreError::Corrupt(format!("reflow {id} is missing")))
    }

    /// The moves of a recorded reflow, as this transaction sees them.
    pub fn reflow_moves(&self, id: &str) -> Result<Vec<MoveRecord>> {
        moves_of(self.conn(), id)
    }
}
