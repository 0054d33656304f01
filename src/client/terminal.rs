//! What the client shows while it waits, on stderr: a task's status message as it changes (one
//! progress line rewritten in place on a terminal, plain lines otherwise, for logs), notes, and
//! the approval question, asked on a terminal. Results go to stdout elsewhere; this file never
//! writes there.

use crate::mcp::client::TaskView;
use std::io::{BufRead, IsTerminal, Write};

/// The answer to an approval question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Accept,
    Decline,
    /// Cancel the task.
    Cancel,
}

impl Answer {
    /// The elicitation action it sends.
    pub fn action(self) -> &'static str {
        match self {
            Answer::Accept => "accept",
            Answer::Decline => "decline",
            Answer::Cancel => "cancel",
        }
    }
}

/// The status display on stderr.
pub struct Progress {
    /// Rewrite one line in place (stderr is a terminal), or write plain lines.
    in_place: bool,
    /// What was shown last, so that only changes are shown.
    shown: Option<(String, String)>,
    /// A progress line is on screen without its newline.
    open: bool,
}

impl Progress {
    pub fn new() -> Self {
        Progress { in_place: std::io::stderr().is_terminal(), shown: None, open: false }
    }

    /// Shows the task's state and status message, if either changed.
    pub fn show(&mut self, task: &TaskView) {
        let now = (task.state.as_str().to_owned(), task.status_message.clone().unwrap_or_default());
        if self.shown.as_ref() == Some(&now) {
            return;
        }
        let mut err = std::io::stderr().lock();
        if self.in_place {
            // Back to the start of the line, clear it, write; the newline comes with the next note.
            let _ = write!(err, "\r\x1b[2K  [{}] {}", now.0, now.1);
            self.open = true;
        } else {
            let _ = writeln!(err, "  [{}] {}", now.0, now.1);
        }
        let _ = err.flush();
        self.shown = Some(now);
    }

    /// A line of its own (ends any progress line first).
    pub fn note(&mut self, text: &str) {
        self.end_line();
        say(text);
    }

    /// Ends the progress line, if one is open.
    pub fn end_line(&mut self) {
        if self.open {
            say("");
            self.open = false;
        }
    }

    /// Forget what was shown, so the next state is shown again (after a question, say).
    pub fn reset(&mut self) {
        self.end_line();
        self.shown = None;
    }
}

impl Default for Progress {
    fn default() -> Self {
        Self::new()
    }
}

/// Writes a line to stderr. A closed stderr (a pipe whose reader left) is not worth dying for:
/// the task's fate is in the state file, not on the screen.
pub fn say(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

/// Whether a person can be asked: stdin and stderr are both terminals.
pub fn can_ask() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Asks on the terminal until the answer is one of accept, decline or cancel; `None` at end of input.
/// Blocking: call it on a blocking thread.
pub fn ask(question: &str) -> Option<Answer> {
    say(question);
    let stdin = std::io::stdin();
    let mut line = String::new();
    loop {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "Apply these moves? [y]es, [n]o (decline, keep nothing), [c]ancel the task: ");
        let _ = err.flush();
        drop(err);
        line.clear();
        match stdin.lock().read_line(&mut line) {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
        match line.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" | "accept" => return Some(Answer::Accept),
            "n" | "no" | "decline" => return Some(Answer::Decline),
            "c" | "cancel" => return Some(Answer::Cancel),
            _ => say("Please answer y, n or c."),
        }
    }
}
