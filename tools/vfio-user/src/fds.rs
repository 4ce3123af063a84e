//! Creating the descriptors a vfio-user client hands to a server: memfds for DMA memory and
//! eventfds for interrupts.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

/// A close-on-exec memfd of `size` bytes (zero-filled), e.g. guest memory for `DMA_MAP`.
pub fn memfd(name: &str, size: u64) -> io::Result<File> {
    let name = CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in memfd name"))?;
    // SAFETY: `name` is a valid NUL-terminated string that outlives the call.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: memfd_create returned a new descriptor that nothing else owns.
    let file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    file.set_len(size)?;
    Ok(file)
}

/// A close-on-exec eventfd with counter 0. Write 8 native-endian bytes to signal it, read 8
/// bytes to collect (and reset) the count.
pub fn eventfd() -> io::Result<File> {
    // SAFETY: eventfd takes no pointers.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: eventfd returned a new descriptor that nothing else owns.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn memfd_has_size_and_eventfd_counts() {
        let m = memfd("test", 8192).unwrap();
        assert_eq!(m.metadata().unwrap().len(), 8192);
        let mut e = eventfd().unwrap();
        e.write_all(&2u64.to_ne_bytes()).unwrap();
        e.write_all(&3u64.to_ne_bytes()).unwrap();
        let mut b = [0u8; 8];
        e.read_exact(&mut b).unwrap();
        assert_eq!(u64::from_ne_bytes(b), 5);
    }
}
