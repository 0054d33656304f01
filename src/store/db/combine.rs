//! Group commit: the last statements of write transactions that connections of one pool have
//! ready at the same moment go out as one transaction, on one of those connections, under one
//! take of the studio's lock, with one commit and one flush of the log
//! ([`Transaction::query_row_then_commit_with_others`](super::Transaction::query_row_then_commit_with_others)).
//!
//! There is no thread of its own and no timer. The first connection to come while no batch is
//! under way begins its transaction at once, and waits for the studio's lock: at once when it is
//! free, or as long as another server's transaction holds it. Those that come while a batch is
//! under way queue. A sender that has the lock takes every statement queued by then
//! ([`Leading::gather`]), up to [`MOST`], and sends them with its own and the commit: as one
//! statement, when the caller has a statement for many and they are all the same ([`together`],
//! [`apart`]). Once the batch has committed (its flush to disk may still be under way), its
//! sender hands the next batch to the first connection queued, which begins its transaction in
//! turn. Under load the batches grow by themselves: a batch takes what came during the one
//! before it and during its own wait for the lock, which is the time the statements would
//! otherwise have waited for the lock inside PostgreSQL. Alone, a statement waits for nobody: it
//! costs one round trip more than a transaction's own single statement, its `BEGIN`'s. Each
//! connection hears of its statement only once the batch's commit is flushed.
//!
//! Only a statement that checks every rule it depends on by itself, under the lock, may be sent
//! this way: it runs in another connection's transaction, after the statements before it in the
//! batch, whose writes it sees. Its connection has sent nothing of its transaction and holds no
//! lock while it waits (its `BEGIN` was deferred), so a queue never waits for one of its own.

use super::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// The most statements one batch sends.
pub const MOST: usize = 64;

/// The queue of one pool's connections. See the module docs.
#[derive(Default)]
pub struct Combiner {
    queue: Mutex<Queue>,
    /// Told of every outcome and every batch handed over.
    told: Condvar,
}

#[derive(Default)]
struct Queue {
    /// A batch is being sent and has not yet released the studio's lock, or has been handed to
    /// the first of `waiting`.
    leading: bool,
    waiting: VecDeque<Statement>,
    outcomes: HashMap<u64, Outcome>,
    next_ticket: u64,
}

/// A statement to send, with its arguments, and the ticket its connection waits on.
pub struct Statement {
    pub ticket: u64,
    pub sql: String,
    pub values: Vec<Value>,
}

/// What became of a statement that another connection sent.
#[derive(Clone)]
pub enum Outcome {
    /// Committed: the statement's rows.
    Rows(Vec<Vec<Value>>),
    /// Not committed, because a statement sent with it failed (or the connection was lost
    /// before anything could be): it is to be made again, on its own.
    Again,
    /// The connection that sent it was lost once the batch may have been committed: whether it
    /// took effect is unknown. What PostgreSQL or the network said.
    Unknown(String),
    /// Send the next batch: this statement first, then those queued behind it.
    Lead,
}

/// What a connection that offers a statement is to do.
pub enum Turn<'a> {
    /// Send this batch, its own statement first, and then tell the others ([`Leading`]).
    Lead(Leading<'a>),
    /// Another connection sent it.
    Done(Outcome),
}

impl Combiner {
    /// Offers a statement: this connection sends it with those queued now, or waits for the
    /// connection that sends it with others.
    pub fn offer(&self, sql: &str, values: Vec<Value>) -> Turn<'_> {
        let mut queue = self.lock();
        let ticket = queue.next_ticket;
        queue.next_ticket += 1;
        let own = Statement { ticket, sql: sql.to_owned(), values };
        if !queue.leading {
            queue.leading = true;
            return Turn::Lead(Leading { combiner: self, batch: vec![own], told: false, handed: AtomicBool::new(false) });
        }
        queue.waiting.push_back(own);
        loop {
            queue = self.told.wait(queue).unwrap_or_else(PoisonError::into_inner);
            match queue.outcomes.remove(&ticket) {
                Some(Outcome::Lead) => {
                    let take = queue.waiting.len().min(MOST);
                    let batch: Vec<Statement> = queue.waiting.drain(..take).collect();
                    debug_assert_eq!(batch.first().map(|s| s.ticket), Some(ticket));
                    return Turn::Lead(Leading { combiner: self, batch, told: false, handed: AtomicBool::new(false) });
                }
                Some(outcome) => return Turn::Done(outcome),
                None => {}
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A batch to send: its first statement is the sender's own. Dropped without [`Leading::tell`]
/// (the sender gave up before sending, or panicked), it tells the others to make theirs again.
pub struct Leading<'a> {
    combiner: &'a Combiner,
    batch: Vec<Statement>,
    told: bool,
    /// The next batch was handed on ([`Leading::released`]).
    handed: AtomicBool,
}

impl Leading<'_> {
    pub fn statements(&self) -> &[Statement] {
        &self.batch
    }

    /// Takes into the batch the statements queued since it was formed, in their order, up to
    /// [`MOST`] in all: its sender has the studio's lock, and sends them all now.
    pub fn gather(&mut self) {
        let mut queue = self.combiner.lock();
        let take = queue.waiting.len().min(MOST.saturating_sub(self.batch.len()));
        self.batch.extend(queue.waiting.drain(..take));
    }

    /// The batch has released the studio's lock (committed, but maybe not yet flushed to disk,
    /// or failed): the next batch may be sent. Once; the first call hands it on.
    pub fn released(&self) {
        if self.handed.swap(true, Ordering::AcqRel) {
            return;
        }
        let mut queue = self.combiner.lock();
        hand_over(&mut queue);
        drop(queue);
        self.combiner.told.notify_all();
    }

    /// Tells the other statements' connections what became of theirs (one outcome each, in the
    /// batch's order after the first), and hands the next batch on if that was not done yet.
    pub fn tell(mut self, outcomes: impl IntoIterator<Item = Outcome>) {
        self.told = true;
        self.settle(outcomes.into_iter());
    }

    fn settle(&self, mut outcomes: impl Iterator<Item = Outcome>) {
        let mut queue = self.combiner.lock();
        for statement in self.batch.iter().skip(1) {
            queue.outcomes.insert(statement.ticket, outcomes.next().unwrap_or(Outcome::Again));
        }
        if !self.handed.swap(true, Ordering::AcqRel) {
            hand_over(&mut queue);
        }
        drop(queue);
        self.combiner.told.notify_all();
    }
}

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        if !self.told {
            self.settle(std::iter::empty());
        }
    }
}

/// The one argument of a batch sent as one statement for many
/// ([`Transaction::query_row_then_commit_with_others`](super::Transaction::query_row_then_commit_with_others)'s
/// `many`): a JSON array of each statement's arguments, in the batch's order.
pub fn together(batch: &[Statement]) -> Value {
    let argument = |value: &Value| match value {
        Value::Null => serde_json::Value::Null,
        Value::Int(n) => serde_json::Value::from(*n),
        Value::Text(text) => serde_json::Value::from(text.as_str()),
    };
    let each = batch.iter().map(|statement| serde_json::Value::Array(statement.values.iter().map(argument).collect()));
    Value::Text(serde_json::Value::Array(each.collect()).to_string())
}

/// The outcome of each of a batch's `statements`, from the rows of the one statement that was
/// sent for them all, committed: a row ends with its statement's position (from 1) and 1 if it
/// is to be made again. A statement without a row is [`Outcome::Unknown`]: the batch was
/// committed, and whether it wrote is not known.
pub fn apart(rows: Vec<Vec<Value>>, statements: usize) -> Vec<Outcome> {
    let mut outcomes: Vec<Option<Outcome>> = (0..statements).map(|_| None).collect();
    for mut row in rows {
        let (Some(Value::Int(again)), Some(Value::Int(position))) = (row.pop(), row.pop()) else { continue };
        let Some(slot) = usize::try_from(position).ok().and_then(|position| outcomes.get_mut(position.wrapping_sub(1))) else { continue };
        *slot = Some(if again == 1 { Outcome::Again } else { Outcome::Rows(vec![row]) });
    }
    let missing = || Outcome::Unknown("the batch was committed, but its statement for many returned no row for this one".into());
    outcomes.into_iter().map(|outcome| outcome.unwrap_or_else(missing)).collect()
}

/// The next batch goes to the first connection queued, or none is under way.
fn hand_over(queue: &mut Queue) {
    match queue.waiting.front().map(|s| s.ticket) {
        Some(next) => {
            queue.outcomes.insert(next, Outcome::Lead);
        }
        None => queue.leading = false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Eight threads offer 200 statements each, and each sender "commits" its batch by adding it
    /// to a log: every statement is sent exactly once, by one sender, and each hears its own
    /// position back; batches form while one is under way (the first sender holds its batch
    /// until two others queue, so that the next batch holds at least two whatever the machine's
    /// load).
    #[test]
    fn every_statement_offered_is_sent_once_and_told_its_own_outcome() {
        let combiner = Arc::new(Combiner::default());
        let log = Arc::new(Mutex::new(Vec::<(i64, i64)>::new()));
        let largest = Arc::new(Mutex::new(0usize));
        let (start, first) = (Arc::new(std::sync::Barrier::new(8)), Arc::new(AtomicBool::new(true)));
        let threads: Vec<_> = (0..8i64)
            .map(|thread| {
                let (combiner, log, largest, start, first) = (combiner.clone(), log.clone(), largest.clone(), start.clone(), first.clone());
                std::thread::spawn(move || {
                    start.wait();
                    for n in 0..200i64 {
                        let rows = match combiner.offer("INSERT", vec![Value::Int(thread), Value::Int(n)]) {
                            Turn::Done(Outcome::Rows(rows)) => rows,
                            Turn::Done(_) => panic!("a batch that failed nowhere told a statement it failed"),
                            Turn::Lead(leading) => {
                                let mut rows = Vec::new();
                                {
                                    let mut log = log.lock().unwrap();
                                    for statement in leading.statements() {
                                        let [Value::Int(t), Value::Int(n)] = statement.values[..] else { panic!("values lost") };
                                        log.push((t, n));
                                        rows.push(vec![vec![Value::Int(t), Value::Int(n), Value::Int(log.len() as i64)]]);
                                    }
                                }
                                if first.swap(false, Ordering::AcqRel) {
                                    while combiner.lock().waiting.len() < 2 {
                                        std::thread::yield_now();
                                    }
                                }
                                leading.released();
                                std::thread::sleep(std::time::Duration::from_micros(200));
                                let mut largest = largest.lock().unwrap();
                                *largest = (*largest).max(rows.len());
                                let own = rows.remove(0);
                                leading.tell(rows.into_iter().map(Outcome::Rows));
                                own
                            }
                        };
                        assert_eq!((rows[0][0].clone(), rows[0][1].clone()), (Value::Int(thread), Value::Int(n)), "a statement was told another's outcome");
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let mut log = log.lock().unwrap().clone();
        assert_eq!(log.len(), 1600);
        log.sort();
        log.dedup();
        assert_eq!(log.len(), 1600, "a statement was sent twice");
        assert!(*largest.lock().unwrap() > 1, "no batch ever held more than one statement");
        assert!(!combiner.lock().leading && combiner.lock().waiting.is_empty() && combiner.lock().outcomes.is_empty());
    }

    /// A sender that has the lock takes every statement queued since its batch formed, in their
    /// order and up to [`MOST`]; each of those connections hears its own outcome, and those left
    /// queued wait for the next batch, which the first of them leads.
    #[test]
    fn a_sender_with_the_lock_gathers_the_statements_queued_meanwhile() {
        let combiner = Arc::new(Combiner::default());
        let Turn::Lead(mut first) = combiner.offer("INSERT", vec![Value::Int(0)]) else { panic!("the first offer did not lead") };
        let waiters: Vec<_> = (1..=MOST as i64 + 1)
            .map(|n| {
                let offering = combiner.clone();
                let waiter = std::thread::spawn(move || match offering.offer("INSERT", vec![Value::Int(n)]) {
                    Turn::Done(Outcome::Rows(rows)) => rows[0][0].clone(),
                    Turn::Lead(leading) => {
                        let sent: Vec<Value> = leading.statements().iter().map(|s| s.values[0].clone()).collect();
                        assert_eq!(sent, [Value::Int(MOST as i64), Value::Int(MOST as i64 + 1)], "the next batch: the two left queued, in order");
                        let own = sent[0].clone();
                        leading.tell(sent[1..].iter().map(|v| Outcome::Rows(vec![vec![v.clone()]])));
                        own
                    }
                    Turn::Done(_) => panic!("a batch that failed nowhere told a statement it failed"),
                });
                // Queued one after another, so that the queue's order is known.
                while combiner.lock().waiting.len() < n as usize {
                    std::thread::yield_now();
                }
                waiter
            })
            .collect();
        first.gather();
        let gathered: Vec<Value> = first.statements().iter().map(|s| s.values[0].clone()).collect();
        assert_eq!(gathered, (0..MOST as i64).map(Value::Int).collect::<Vec<_>>(), "its own first, then the first {} queued, in order", MOST - 1);
        let outcomes: Vec<Outcome> = gathered[1..].iter().map(|v| Outcome::Rows(vec![vec![v.clone()]])).collect();
        first.released();
        first.tell(outcomes);
        let heard: Vec<Value> = waiters.into_iter().map(|w| w.join().unwrap()).collect();
        assert_eq!(heard, (1..=MOST as i64 + 1).map(Value::Int).collect::<Vec<_>>(), "each heard its own outcome");
        assert!(!combiner.lock().leading && combiner.lock().waiting.is_empty() && combiner.lock().outcomes.is_empty());
    }

    /// A sender that gives up before sending tells the others to make theirs again, and the
    /// next batch still goes to one of them.
    #[test]
    fn a_batch_dropped_unsent_tells_the_others_to_make_theirs_again() {
        let combiner = Arc::new(Combiner::default());
        let Turn::Lead(first) = combiner.offer("INSERT", vec![Value::Int(0)]) else { panic!("the first offer did not lead") };
        let waiters: Vec<_> = (1..4)
            .map(|n| {
                let combiner = combiner.clone();
                std::thread::spawn(move || match combiner.offer("INSERT", vec![Value::Int(n)]) {
                    Turn::Done(Outcome::Again) => "again",
                    Turn::Lead(leading) => {
                        leading.tell(std::iter::empty());
                        "led"
                    }
                    Turn::Done(_) => "other",
                })
            })
            .collect();
        while combiner.lock().waiting.len() < 3 {
            std::thread::yield_now();
        }
        drop(first);
        let mut heard: Vec<&str> = waiters.into_iter().map(|w| w.join().unwrap()).collect();
        heard.sort();
        assert_eq!(heard, ["again", "again", "led"], "the first queued leads the next batch, the rest are told again by it");
        assert!(!combiner.lock().leading);
    }

    /// A batch sent as one statement: its argument holds each statement's arguments in order,
    /// text escaped as JSON; its rows, in any order, go back to their statements by position,
    /// without the two columns of the statement for many; one to be made again is told so, and
    /// one without a row, or a row of a position out of the batch, is not taken for one that
    /// wrote nothing.
    #[test]
    fn a_batch_sent_as_one_statement_is_told_apart_by_position() {
        let statement = |ticket, values| Statement { ticket, sql: "INSERT".into(), values };
        let batch = [
            statement(0, vec![Value::Text("a \"quoted\"\nline".into()), Value::Int(-7), Value::Null]),
            statement(1, vec![Value::Text("é".into()), Value::Int(i64::MAX), Value::Null]),
        ];
        let Value::Text(argument) = together(&batch) else { panic!("the argument is JSON text") };
        assert_eq!(argument, r#"[["a \"quoted\"\nline",-7,null],["é",9223372036854775807,null]]"#);

        let row = |own: i64, position: i64, again: i64| vec![Value::Int(own), Value::Int(position), Value::Int(again)];
        let told = |outcome: &Outcome| match outcome {
            Outcome::Rows(rows) => format!("rows {rows:?}"),
            Outcome::Again => "again".into(),
            Outcome::Unknown(_) => "unknown".into(),
            Outcome::Lead => "lead".into(),
        };
        let outcomes = apart(vec![row(30, 3, 0), row(10, 1, 0), row(20, 2, 1), row(50, 5, 0), row(0, 0, 0)], 4);
        let outcomes: Vec<String> = outcomes.iter().map(told).collect();
        assert_eq!(outcomes, ["rows [[Int(10)]]", "again", "rows [[Int(30)]]", "unknown"]);
    }
}
