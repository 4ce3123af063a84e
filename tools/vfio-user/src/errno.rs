//! [`Errno`]: the error value a vfio-user reply carries.

use std::fmt;
use std::io;

/// A positive UNIX errno value, as carried in the `error` field of a vfio-user error reply.
///
/// QEMU turns the field into `-errno`, so an error reply must never carry 0: the server
/// replaces 0 (and negative values) with [`Errno::EIO`] before sending.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Errno(pub i32);

impl Errno {
    /// Operation not permitted.
    pub const EPERM: Self = Self(libc::EPERM);
    /// No such entry (e.g. a DMA unmap that matches no mapping).
    pub const ENOENT: Self = Self(libc::ENOENT);
    /// I/O error; also the stand-in for an invalid (zero or negative) errno.
    pub const EIO: Self = Self(libc::EIO);
    /// Argument list too long: a message or transfer larger than the negotiated maximum.
    pub const E2BIG: Self = Self(libc::E2BIG);
    /// Out of memory.
    pub const ENOMEM: Self = Self(libc::ENOMEM);
    /// Bad address: a DMA access outside the mapped guest memory.
    pub const EFAULT: Self = Self(libc::EFAULT);
    /// Device or resource busy.
    pub const EBUSY: Self = Self(libc::EBUSY);
    /// Already exists: a DMA map overlapping an existing mapping.
    pub const EEXIST: Self = Self(libc::EEXIST);
    /// No such device.
    pub const ENODEV: Self = Self(libc::ENODEV);
    /// Invalid argument: malformed message, bad index, out-of-range access.
    pub const EINVAL: Self = Self(libc::EINVAL);
    /// No space left: too many DMA mappings.
    pub const ENOSPC: Self = Self(libc::ENOSPC);
    /// Function not implemented.
    pub const ENOSYS: Self = Self(libc::ENOSYS);
    /// Operation not supported: unknown or unimplemented commands and features.
    pub const ENOTSUP: Self = Self(libc::ENOTSUP);

    /// The raw value.
    pub fn raw(self) -> i32 {
        self.0
    }

    /// The value to put on the wire: always a positive errno ([`Errno::EIO`] if `self` is not).
    pub fn to_wire(self) -> u32 {
        if self.0 > 0 {
            self.0.unsigned_abs()
        } else {
            Self::EIO.0.unsigned_abs()
        }
    }

    /// Reads the `error` field of a reply header.
    pub fn from_wire(v: u32) -> Self {
        Self(i32::try_from(v).unwrap_or(libc::EIO))
    }
}

impl fmt::Debug for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Errno({}: {})",
            self.0,
            io::Error::from_raw_os_error(self.0)
        )
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&io::Error::from_raw_os_error(self.0), f)
    }
}

impl std::error::Error for Errno {}

impl From<io::Error> for Errno {
    /// Keeps the OS error code; errors without one become [`Errno::EIO`].
    fn from(e: io::Error) -> Self {
        Self(e.raw_os_error().filter(|&v| v > 0).unwrap_or(libc::EIO))
    }
}

impl From<Errno> for io::Error {
    fn from(e: Errno) -> Self {
        io::Error::from_raw_os_error(e.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_value_is_never_zero() {
        assert_eq!(Errno(0).to_wire(), libc::EIO as u32);
        assert_eq!(Errno(-5).to_wire(), libc::EIO as u32);
        assert_eq!(Errno::EINVAL.to_wire(), libc::EINVAL as u32);
        assert_eq!(Errno::from_wire(u32::MAX), Errno::EIO);
    }

    #[test]
    fn io_error_round_trip() {
        let e: Errno = io::Error::from_raw_os_error(libc::EFAULT).into();
        assert_eq!(e, Errno::EFAULT);
        let e: Errno = io::Error::other("no code").into();
        assert_eq!(e, Errno::EIO);
    }
}
