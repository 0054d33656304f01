//! Which process a lease names, on this machine: this server's own name for leases
//! (`host/pid/random`), and whether a holder that ran here is gone (a same-machine liveness check
//! with `kill(pid, 0)`). A holder on another machine is never judged here: its lease decides.
//! Tasks' leases and the outbox's claims (`crate::notify`) name their holders alike.

/// This server as leases name it: the machine, the process and a random part (a process id
/// alone may be reused): `host/pid/random`.
pub fn server_name() -> String {
    let random = crate::auth::secret::random(4).unwrap_or_default();
    format!("{}/{}/{random}", host_name(), std::process::id())
}

/// This machine's name, as leases write it (a `/` in it would cut the `host/pid/random` form),
/// and as e-mail greets its SMTP server with.
pub fn host_name() -> String {
    let mut buffer = [0u8; 256];
    // SAFETY: the buffer is writable for its whole length, which is what gethostname is given.
    let done = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) };
    let end = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
    match (done, std::str::from_utf8(&buffer[..end])) {
        (0, Ok(name)) if !name.is_empty() => name.replace('/', "_"),
        _ => "localhost".to_owned(),
    }
}

/// Whether a lease holder (`host/pid/random`) other than `me` was a process on this machine that
/// is gone. (A holder with this process's id but not its name was an earlier process: a server
/// restarted as the same pid, as in a container.)
pub fn is_dead_here(holder: &str, me: &str) -> bool {
    let mut parts = holder.split('/');
    let (Some(host), Some(pid)) = (parts.next(), parts.next().and_then(|pid| pid.parse::<libc::pid_t>().ok())) else { return false };
    if holder == me || host != host_name() || pid <= 0 {
        return false;
    }
    if pid as u32 == std::process::id() {
        return true;
    }
    // SAFETY: signal 0 only asks whether the process exists; nothing is sent.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    !alive && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_holder_is_dead_only_if_it_was_here_and_its_process_is_gone() {
        let me = server_name();
        let host = host_name();
        assert!(!is_dead_here(&me, &me), "this server");
        assert!(is_dead_here(&format!("{host}/{}/older", std::process::id()), &me), "this pid, another name: an earlier process");
        // A child that has exited and been waited for is gone.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(is_dead_here(&format!("{host}/{pid}/x"), &me));
        assert!(!is_dead_here(&format!("another-host/{pid}/x"), &me), "another machine: wait for the lease");
        assert!(!is_dead_here(&format!("{host}/1/x"), &me), "a live process");
        assert!(!is_dead_here("garbage", &me));
    }
}
