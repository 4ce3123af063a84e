//! Waking a model thread asleep in poll(2) from another (a doorbell's timer for the wire
//! thread): an eventfd polled beside what the thread waits for.

/// A wake-up for a thread asleep in poll(2): an eventfd that [`Wake::kick`] makes readable
/// until the thread [`Wake::clear`]s it, so a kick between the thread's last look at the
/// device and its poll is not lost.
pub struct Wake {
    fd: std::os::fd::OwnedFd,
}

impl Wake {
    /// A new, unkicked wake-up.
    pub fn new() -> std::io::Result<Self> {
        // SAFETY: eventfd takes two integers and returns a new fd or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened by eventfd and is owned by nothing else.
        let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        Ok(Wake { fd })
    }

    /// Wakes the thread (its poll returns).
    pub fn kick(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: write reads 8 bytes from a live local; the fd is the open eventfd. A full
        // counter (EAGAIN) is already a pending wake-up.
        unsafe { libc::write(self.raw(), one.as_ptr().cast(), one.len()) };
    }

    /// Takes a pending kick.
    pub fn clear(&self) {
        let mut n = [0u8; 8];
        // SAFETY: read writes at most 8 bytes into a live local; the fd is the open,
        // non-blocking eventfd (EAGAIN when nothing is pending).
        unsafe { libc::read(self.raw(), n.as_mut_ptr().cast(), n.len()) };
    }

    fn raw(&self) -> std::os::fd::RawFd {
        std::os::fd::AsRawFd::as_raw_fd(&self.fd)
    }
}

/// Waits until `fd` is readable or `wake` kicked, or `timeout` passed (`None`: no timeout;
/// rounded up to whole milliseconds); says which of the two is ready. `fd` -1 waits for the
/// kick only.
pub fn poll_two(
    fd: std::os::fd::RawFd,
    wake: &Wake,
    timeout: Option<std::time::Duration>,
) -> std::io::Result<[bool; 2]> {
    let ms = match timeout {
        None => -1,
        Some(t) => t.as_micros().div_ceil(1000).clamp(1, 60_000) as i32,
    };
    let mut pfd = [fd, wake.raw()].map(|fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    });
    // SAFETY: poll reads and writes two pollfds in a live local array; a negative fd is
    // ignored by poll, the other is the open eventfd.
    let n = unsafe { libc::poll(pfd.as_mut_ptr(), 2, ms) };
    if n < 0 {
        let e = std::io::Error::last_os_error();
        return if e.kind() == std::io::ErrorKind::Interrupted {
            Ok([false; 2])
        } else {
            Err(e)
        };
    }
    Ok(pfd.map(|p| p.revents != 0))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_kick_wakes_the_poll_until_cleared() {
        let w = Wake::new().unwrap();
        let ready = |w: &Wake| poll_two(-1, w, Some(Duration::ZERO)).unwrap();
        assert_eq!(ready(&w), [false, false]);
        w.kick();
        w.kick();
        assert_eq!(ready(&w), [false, true]);
        assert_eq!(ready(&w), [false, true], "until taken");
        w.clear();
        assert_eq!(ready(&w), [false, false], "two kicks, one wake-up");
    }
}
