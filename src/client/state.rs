//! The client's state file: the tasks it started and has not seen end, so that a client that
//! crashed (or a laptop that slept) picks them up again instead of starting a second reflow.
//! Every change is a locked read-modify-write that replaces the file atomically (a temporary file,
//! fsync, rename, fsync of the directory), so a kill at any instant leaves the old file or the new
//! one, never a torn one. It holds no secret: tokens are given again on every run.

use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The format's version, written in the file.
const VERSION: u32 = 1;

/// Why the state file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{} is not a studioflow client state file ({source}); move it away to start afresh", path.display())]
    Unreadable { path: PathBuf, source: serde_json::Error },
    #[error("{} was written by a newer studioflow (format {found}, this one reads {VERSION})", path.display())]
    Newer { path: PathBuf, found: u32 },
    #[error("no state directory: set XDG_STATE_HOME or HOME, or give --state FILE")]
    NoHome,
}

/// Where a task's server is. The token is not kept: it is given again with `--token` or
/// `STUDIOFLOW_TOKEN`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SavedServer {
    /// A Streamable HTTP endpoint URL.
    Http(String),
    /// A server command the client starts and talks to on stdio.
    Stdio(String),
}

impl std::fmt::Display for SavedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SavedServer::Http(url) => write!(f, "{url}"),
            SavedServer::Stdio(command) => write!(f, "stdio: {command}"),
        }
    }
}

/// What was asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedRequest {
    pub month: String,
    pub offline_rooms: Vec<String>,
    pub dry_run: bool,
    pub require_approval: bool,
}

impl std::fmt::Display for SavedRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "reflow {} with {} offline", self.month, self.offline_rooms.join(", "))?;
        if self.dry_run {
            write!(f, " (dry run)")?;
        }
        if self.require_approval {
            write!(f, " (asks before applying)")?;
        }
        Ok(())
    }
}

/// One task the client started and has not seen end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedTask {
    pub task_id: String,
    pub server: SavedServer,
    pub request: SavedRequest,
    /// When the handle arrived (RFC 3339, UTC).
    pub started_at: String,
    /// The last state the client saw: working, input_required, ...
    pub last_status: String,
    pub last_message: Option<String>,
    /// When the client last saw it (RFC 3339, UTC).
    pub last_seen_at: String,
    /// The poll interval the server last asked for; a resumed client waits this long before its
    /// first poll, so that it never polls sooner than that after a client that died.
    pub poll_interval_ms: u64,
}

#[derive(Serialize, Deserialize)]
struct Contents {
    version: u32,
    tasks: Vec<SavedTask>,
}

/// The state file at a path.
#[derive(Debug, Clone)]
pub struct StateFile {
    path: PathBuf,
}

/// Now, as the file writes times.
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

impl StateFile {
    pub fn new(path: PathBuf) -> Self {
        StateFile { path }
    }

    /// `$XDG_STATE_HOME/studioflow/tasks.json`, else `~/.local/state/studioflow/tasks.json`.
    pub fn default_path() -> Result<PathBuf, StateError> {
        let nonempty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let base = match nonempty("XDG_STATE_HOME") {
            Some(dir) if dir.is_absolute() => dir,
            _ => nonempty("HOME").ok_or(StateError::NoHome)?.join(".local/state"),
        };
        Ok(base.join("studioflow").join("tasks.json"))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io(&self, source: std::io::Error) -> StateError {
        StateError::Io { path: self.path.clone(), source }
    }

    /// The saved tasks, oldest first; none if there is no file yet.
    pub fn load(&self) -> Result<Vec<SavedTask>, StateError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(self.io(e)),
        };
        let contents: Contents =
            serde_json::from_str(&text).map_err(|source| StateError::Unreadable { path: self.path.clone(), source })?;
        if contents.version > VERSION {
            return Err(StateError::Newer { path: self.path.clone(), found: contents.version });
        }
        Ok(contents.tasks)
    }

    /// Saves a new task (replacing one of the same id).
    pub fn add(&self, task: SavedTask) -> Result<(), StateError> {
        self.modify(|tasks| {
            tasks.retain(|t| t.task_id != task.task_id);
            tasks.push(task);
        })
    }

    /// Changes a saved task, if it is still there.
    pub fn update(&self, task_id: &str, change: impl FnOnce(&mut SavedTask)) -> Result<(), StateError> {
        self.modify(|tasks| {
            if let Some(task) = tasks.iter_mut().find(|t| t.task_id == task_id) {
                change(task);
            }
        })
    }

    /// Forgets a task; nothing happens if it is not there.
    pub fn remove(&self, task_id: &str) -> Result<(), StateError> {
        self.modify(|tasks| tasks.retain(|t| t.task_id != task_id))
    }

    /// One read-modify-write, under an exclusive lock on a companion `.lock` file, so that two
    /// clients sharing the file (a nightly job and a person) never lose each other's changes.
    fn modify(&self, change: impl FnOnce(&mut Vec<SavedTask>)) -> Result<(), StateError> {
        let dir = match self.path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&dir).map_err(|e| self.io(e))?;
        let _lock = Lock::take(&with_suffix(&self.path, ".lock")).map_err(|e| self.io(e))?;
        let mut tasks = self.load()?;
        change(&mut tasks);
        let text = serde_json::to_string_pretty(&Contents { version: VERSION, tasks }).map_err(|e| self.io(std::io::Error::other(e)))?;
        let temporary = with_suffix(&self.path, &format!(".tmp.{}", std::process::id()));
        let written = (|| {
            let mut file = File::create(&temporary)?;
            file.write_all(text.as_bytes())?;
            file.write_all(b"\n")?;
            file.sync_all()?;
            std::fs::rename(&temporary, &self.path)?;
            // The rename is durable once the directory is.
            File::open(&dir)?.sync_all()
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
        written.map_err(|e| self.io(e))
    }
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// An exclusive `flock` on a file, released when dropped or when the process dies (even by
/// `kill -9`), so a crashed client never leaves the state file locked.
struct Lock {
    _file: File,
}

impl Lock {
    fn take(path: &Path) -> std::io::Result<Lock> {
        let file = OpenOptions::new().create(true).truncate(false).write(true).open(path)?;
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            loop {
                // SAFETY: flock on a descriptor this function owns; it touches no memory.
                let done = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
                if done == 0 {
                    break;
                }
                let error = std::io::Error::last_os_error();
                if error.kind() != std::io::ErrorKind::Interrupted {
                    return Err(error);
                }
            }
        }
        Ok(Lock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str) -> SavedTask {
        SavedTask {
            task_id: id.into(),
            server: SavedServer::Http("http://127.0.0.1:8080/mcp".into()),
            request: SavedRequest { month: "2026-09".into(), offline_rooms: vec!["studio-b".into()], dry_run: false, require_approval: false },
            started_at: now(),
            last_status: "working".into(),
            last_message: None,
            last_seen_at: now(),
            poll_interval_ms: 250,
        }
    }

    #[test]
    fn tasks_are_added_updated_and_removed_and_no_temporary_file_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateFile::new(dir.path().join("deep/er/tasks.json"));
        assert!(state.load().unwrap().is_empty(), "no file is no task");
        state.add(task("tsk_a")).unwrap();
        state.add(task("tsk_b")).unwrap();
        state.update("tsk_a", |t| t.last_status = "input_required".into()).unwrap();
        let tasks = state.load().unwrap();
        assert_eq!(tasks.iter().map(|t| t.task_id.as_str()).collect::<Vec<_>>(), ["tsk_a", "tsk_b"]);
        assert_eq!(tasks[0].last_status, "input_required");
        state.remove("tsk_a").unwrap();
        state.remove("tsk_a").unwrap();
        assert_eq!(state.load().unwrap(), vec![task("tsk_b")].into_iter().map(|mut t| {
            t.started_at = tasks[1].started_at.clone();
            t.last_seen_at = tasks[1].last_seen_at.clone();
            t
        }).collect::<Vec<_>>());
        let names: Vec<_> = std::fs::read_dir(dir.path().join("deep/er")).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(names.iter().all(|n| !n.to_string_lossy().contains(".tmp.")), "{names:?}");
    }

    #[test]
    fn a_file_that_is_not_ours_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.json");
        std::fs::write(&path, "my shopping list").unwrap();
        let state = StateFile::new(path.clone());
        assert!(matches!(state.add(task("tsk_a")), Err(StateError::Unreadable { .. })));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "my shopping list");
    }
}
