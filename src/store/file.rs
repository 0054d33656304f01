//! Why an SQLite file cannot be opened or written, in words that say what to change. SQLite says
//! only "attempt to write a readonly database" (SQLITE_READONLY) or "unable to open database
//! file" (SQLITE_CANTOPEN); when the store meets either, it asks the file system what is in the
//! way: the file, the write-ahead log SQLite keeps beside it (`-wal`, `-shm`), the directory
//! (where SQLite creates those), a read-only file system, or a directory that is not there.
//! It only reads permissions: nothing is created, changed or probed by writing.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Why `path` could not be opened or written (SQLite's words in `sqlite`), and what to do.
pub fn explain(path: &Path, sqlite: &str) -> String {
    let shown = path.display();
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let user = this_user();
    if !dir.is_dir() {
        return format!("the directory of the database {shown}, {}, does not exist: create it, or give --db a path in a directory that exists", dir.display());
    }
    let exists = path.exists();
    if exists {
        match writable(path) {
            Ok(()) => {}
            Err(e) if read_only_fs(&e) => return read_only_fs_text(path),
            Err(_) => {
                return format!(
                    "the database {shown} is read-only for the user running studioflow ({user}), and studioflow writes to its database \
                     (every change, task and token is a write): make it writable for that user (`chmod u+w {shown}`, or `chown` it to that user), \
                     or run studioflow as the user that owns it"
                );
            }
        }
    }
    let mut missing_companion = false;
    for suffix in ["-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let companion = Path::new(&name);
        if !companion.exists() {
            missing_companion = true;
        } else if writable(companion).is_err() {
            return format!(
                "{} (SQLite's write-ahead log beside the database) cannot be written by the user running studioflow ({user}): \
                 make it writable for this user, or, with no studioflow running on {shown}, remove it (SQLite makes it again)",
                companion.display()
            );
        }
    }
    if !exists || missing_companion {
        match writable(dir) {
            Ok(()) => {}
            Err(e) if read_only_fs(&e) => return read_only_fs_text(path),
            Err(_) => {
                let made = if exists { format!("its write-ahead log beside {shown} ({shown}-wal and {shown}-shm)") } else { format!("the database {shown}") };
                return format!(
                    "the directory {} cannot be written by the user running studioflow ({user}), and SQLite must create {made} there: \
                     make the directory writable for that user, or move the database to a directory it can write",
                    dir.display()
                );
            }
        }
    }
    format!("cannot open or write the database {shown} ({sqlite}): check that the user running studioflow ({user}) can write it and the directory it is in")
}

fn read_only_fs_text(path: &Path) -> String {
    format!(
        "the database {} is on a read-only file system, and studioflow writes to its database: remount it read-write, \
         or copy the database to a writable place and give --db that path",
        path.display()
    )
}

fn read_only_fs(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EROFS)
}

/// Whether this process may write `path`, as the kernel decides it for this process's user
/// (owner, group, mode, ACLs, a read-only mount; root passes all but the last).
fn writable(path: &Path) -> io::Result<()> {
    let name = CString::new(path.as_os_str().as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `name` is a NUL-terminated string that lives across the call; faccessat only reads it.
    let done = unsafe { libc::faccessat(libc::AT_FDCWD, name.as_ptr(), libc::W_OK, libc::AT_EACCESS) };
    if done == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// The user this process runs as, for the message: `uid 1000`.
fn this_user() -> String {
    // SAFETY: geteuid takes nothing and cannot fail.
    format!("uid {}", unsafe { libc::geteuid() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_directory_is_named() {
        let text = explain(Path::new("/nonexistent-studioflow-dir/studio.db"), "unable to open database file");
        assert!(text.contains("/nonexistent-studioflow-dir, does not exist: create it"), "{text}");
    }

    #[test]
    fn a_writable_file_falls_back_to_sqlites_words() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("studio.db");
        std::fs::write(&path, b"").unwrap();
        let text = explain(&path, "disk I/O error");
        assert!(text.contains("disk I/O error") && text.contains("uid "), "{text}");
    }
}
