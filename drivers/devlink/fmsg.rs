// SPDX-License-Identifier: GPL-2.0
//! Formatted messages (`struct devlink_fmsg`): the name/value pairs and nests a `diagnose`
//! callback returns to user space (`devlink health diagnose` prints them).
//!
//! As in C, the put functions do not fail one by one: the message records its first error
//! (e.g. out of memory) and devlink returns it to user space instead of the message.

use core::{
    fmt,
    marker::PhantomData,
    ptr::NonNull, //
};

use kernel::{
    prelude::*,
    str::CString, //
};

/// A message being filled by a callback; only valid during that callback.
///
/// # Invariants
///
/// `raw` is a valid message that only the holder of this `Fmsg` fills, for `'a`.
pub struct Fmsg<'a> {
    raw: NonNull<ksys::devlink_fmsg>,
    _p: PhantomData<&'a mut ksys::devlink_fmsg>,
}

impl<'a> Fmsg<'a> {
    /// Wraps the message devlink passed to a callback.
    ///
    /// # Safety
    ///
    /// `raw` must be a valid message that nothing else fills while the returned `Fmsg` (whose
    /// lifetime the caller bounds by the callback) exists.
    pub(crate) unsafe fn from_raw(raw: *mut ksys::devlink_fmsg) -> Self {
        Self {
            // SAFETY: devlink never passes a NULL message (the caller's guarantee).
            raw: unsafe { NonNull::new_unchecked(raw) },
            _p: PhantomData,
        }
    }

    fn ptr(&mut self) -> *mut ksys::devlink_fmsg {
        self.raw.as_ptr()
    }

    /// Adds `name` = `value` (a boolean).
    pub fn put_bool(&mut self, name: &CStr, value: bool) {
        // SAFETY: The message is valid (type invariant); `name` is NUL-terminated and copied.
        unsafe { ksys::devlink_fmsg_bool_pair_put(self.ptr(), name.as_char_ptr(), value) };
    }

    /// Adds `name` = `value` (8 bits).
    pub fn put_u8(&mut self, name: &CStr, value: u8) {
        // SAFETY: As in `put_bool`.
        unsafe { ksys::devlink_fmsg_u8_pair_put(self.ptr(), name.as_char_ptr(), value) };
    }

    /// Adds `name` = `value` (32 bits).
    pub fn put_u32(&mut self, name: &CStr, value: u32) {
        // SAFETY: As in `put_bool`.
        unsafe { ksys::devlink_fmsg_u32_pair_put(self.ptr(), name.as_char_ptr(), value) };
    }

    /// Adds `name` = `value` (64 bits).
    pub fn put_u64(&mut self, name: &CStr, value: u64) {
        // SAFETY: As in `put_bool`.
        unsafe { ksys::devlink_fmsg_u64_pair_put(self.ptr(), name.as_char_ptr(), value) };
    }

    /// Adds `name` = `value` (a string).
    pub fn put_str(&mut self, name: &CStr, value: &CStr) {
        // SAFETY: As in `put_bool`; `value` is NUL-terminated and copied too.
        unsafe {
            ksys::devlink_fmsg_string_pair_put(self.ptr(), name.as_char_ptr(), value.as_char_ptr())
        };
    }

    /// Adds `name` = the formatted `value`, e.g. `format_args!("{:#x}", code)`.
    pub fn put_fmt(&mut self, name: &CStr, value: fmt::Arguments<'_>) -> Result {
        let value = CString::try_from_fmt(value)?;
        self.put_str(name, &value);
        Ok(())
    }

    /// Adds `name` = an object whose pairs `fill` adds.
    pub fn put_object(&mut self, name: &CStr, fill: impl FnOnce(&mut Self) -> Result) -> Result {
        // SAFETY: As in `put_bool`; the nests are closed below in reverse order.
        unsafe {
            ksys::devlink_fmsg_pair_nest_start(self.ptr(), name.as_char_ptr());
            ksys::devlink_fmsg_obj_nest_start(self.ptr());
        }
        let r = fill(self);
        // SAFETY: Closes the nests opened above (also after an error: the message stays
        // well-formed; devlink drops it anyway when the callback fails).
        unsafe {
            ksys::devlink_fmsg_obj_nest_end(self.ptr());
            ksys::devlink_fmsg_pair_nest_end(self.ptr());
        }
        r
    }

    /// Adds `name` = an array of objects, which `fill` adds with [`FmsgArray::put_object`].
    pub fn put_array(
        &mut self,
        name: &CStr,
        fill: impl FnOnce(&mut FmsgArray<'_, 'a>) -> Result,
    ) -> Result {
        // SAFETY: As in `put_bool`; the nest is closed below.
        unsafe { ksys::devlink_fmsg_arr_pair_nest_start(self.ptr(), name.as_char_ptr()) };
        let r = fill(&mut FmsgArray { fmsg: self });
        // SAFETY: Closes the nest opened above (also after an error, as in `put_object`).
        unsafe { ksys::devlink_fmsg_arr_pair_nest_end(self.ptr()) };
        r
    }
}

/// The array being filled by [`Fmsg::put_array`]: its elements are objects.
pub struct FmsgArray<'f, 'a> {
    fmsg: &'f mut Fmsg<'a>,
}

impl FmsgArray<'_, '_> {
    /// Adds an element: an object whose pairs `fill` adds.
    pub fn put_object(&mut self, fill: impl FnOnce(&mut Fmsg<'_>) -> Result) -> Result {
        let f = &mut *self.fmsg;
        // SAFETY: As in `Fmsg::put_bool`; the array nest is open (we are inside
        // `put_array`); the object nest is closed below.
        unsafe { ksys::devlink_fmsg_obj_nest_start(f.ptr()) };
        let r = fill(f);
        // SAFETY: Closes the nest opened above.
        unsafe { ksys::devlink_fmsg_obj_nest_end(f.ptr()) };
        r
    }
}
