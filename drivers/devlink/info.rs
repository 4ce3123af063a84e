// SPDX-License-Identifier: GPL-2.0
//! `devlink dev info`: the request an [`crate::Operations::info_get`] callback fills with the
//! device's serial numbers and the versions of its parts (`struct devlink_info_req`).
//!
//! devlink adds the driver's name itself (the bound driver's, after the callback), so there
//! is no `driver_name_put` (removed upstream in 6.2).
//!
//! Versions are name/value pairs of three kinds: fixed (the hardware: board, ASIC), running
//! (what the device runs now) and stored (what it will run after a reset). The names devlink
//! documents as generic are in [`version`].

use core::{
    marker::PhantomData,
    ptr::NonNull, //
};

use kernel::{
    error::to_result,
    prelude::*, //
};

/// Generic version names (`DEVLINK_INFO_VERSION_GENERIC_*`, `include/net/devlink.h`).
pub mod version {
    use kernel::prelude::*;

    /// The board's identifier (`board.id`).
    pub const BOARD_ID: &CStr = c"board.id";
    /// The board's revision (`board.rev`).
    pub const BOARD_REV: &CStr = c"board.rev";
    /// The overall firmware version (`fw`).
    pub const FW: &CStr = c"fw";
    /// The parameter set of the firmware image (`fw.psid`).
    pub const FW_PSID: &CStr = c"fw.psid";
}

/// A `devlink dev info` request being filled by [`crate::Operations::info_get`]; only valid
/// during that callback.
///
/// The put functions fail when the reply message is full (`EMSGSIZE`); the callback should
/// return that error. An empty value is skipped by devlink.
///
/// # Invariants
///
/// `raw` is a valid request that only the holder of this `InfoRequest` fills, for `'a`.
pub struct InfoRequest<'a> {
    raw: NonNull<ksys::devlink_info_req>,
    _p: PhantomData<&'a mut ksys::devlink_info_req>,
}

impl InfoRequest<'_> {
    /// Wraps the request devlink passed to `info_get`.
    ///
    /// # Safety
    ///
    /// `raw` must be a valid request that nothing else fills while the returned value (whose
    /// lifetime the caller bounds by the callback) exists.
    pub(crate) unsafe fn from_raw(raw: *mut ksys::devlink_info_req) -> Self {
        Self {
            // SAFETY: devlink never passes a NULL request (the caller's guarantee).
            raw: unsafe { NonNull::new_unchecked(raw) },
            _p: PhantomData,
        }
    }

    fn ptr(&mut self) -> *mut ksys::devlink_info_req {
        self.raw.as_ptr()
    }

    /// Adds the device's serial number.
    pub fn serial_number_put(&mut self, sn: &CStr) -> Result {
        // SAFETY: By the type invariant the request is valid and ours; `sn` is NUL-terminated
        // and copied into the message before this returns.
        to_result(unsafe { ksys::devlink_info_serial_number_put(self.ptr(), sn.as_char_ptr()) })
    }

    /// Adds the board's serial number.
    pub fn board_serial_number_put(&mut self, bsn: &CStr) -> Result {
        // SAFETY: As in `serial_number_put`.
        to_result(unsafe {
            ksys::devlink_info_board_serial_number_put(self.ptr(), bsn.as_char_ptr())
        })
    }

    /// Adds a fixed (hardware) version `name` = `value`.
    pub fn version_fixed_put(&mut self, name: &CStr, value: &CStr) -> Result {
        // SAFETY: As in `serial_number_put`; both strings are copied.
        to_result(unsafe {
            ksys::devlink_info_version_fixed_put(self.ptr(), name.as_char_ptr(), value.as_char_ptr())
        })
    }

    /// Adds a running version `name` = `value` (what the device runs now).
    pub fn version_running_put(&mut self, name: &CStr, value: &CStr) -> Result {
        // SAFETY: As in `version_fixed_put`.
        to_result(unsafe {
            ksys::devlink_info_version_running_put(
                self.ptr(),
                name.as_char_ptr(),
                value.as_char_ptr(),
            )
        })
    }

    /// Adds a stored version `name` = `value` (what the device runs after a reset).
    pub fn version_stored_put(&mut self, name: &CStr, value: &CStr) -> Result {
        // SAFETY: As in `version_fixed_put`.
        to_result(unsafe {
            ksys::devlink_info_version_stored_put(
                self.ptr(),
                name.as_char_ptr(),
                value.as_char_ptr(),
            )
        })
    }
}
