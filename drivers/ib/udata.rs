// SPDX-License-Identifier: GPL-2.0
//! [`Udata`]: the driver-private part of a uverbs call (`struct ib_udata`): the request the
//! provider library appended to the core's, and the room for the driver's response.

use crate::{
    driver::IbDriver,
    object::Ucontext, //
};
use kernel::{
    prelude::*,
    uaccess::{
        UserPtr,
        UserSlice, //
    },
};
use zerocopy::{
    FromBytes,
    Immutable,
    IntoBytes, //
};

/// The driver-private request and response buffers of a uverbs call, both in user memory.
///
/// # Invariants
///
/// `raw` is the core's `ib_udata` for the call: `inbuf`/`inlen` and `outbuf`/`outlen` describe
/// user memory (checked by the user-copy functions, never dereferenced directly).
pub struct Udata<'a> {
    raw: &'a ksys::ib_udata,
}

impl<'a> Udata<'a> {
    /// # Safety
    ///
    /// `raw` must be the `ib_udata` the core passes to an op, valid for `'a`.
    pub(crate) unsafe fn from_raw(raw: *const ksys::ib_udata) -> Self {
        // SAFETY: The caller's guarantee.
        let raw = unsafe { &*raw };
        Self { raw }
    }

    /// [`Udata::from_raw`] for an op whose udata is NULL when a kernel user calls it: `None`
    /// then.
    ///
    /// # Safety
    ///
    /// `raw` must be NULL or as for [`Udata::from_raw`].
    pub(crate) unsafe fn from_raw_opt(raw: *const ksys::ib_udata) -> Option<Self> {
        // SAFETY: Not NULL: the caller's guarantee of `from_raw`.
        (!raw.is_null()).then(|| unsafe { Self::from_raw(raw) })
    }

    /// The user context of the call (`rdma_udata_to_drv_context()`): the one the process's
    /// uverbs file holds, live during the call and beyond the objects it creates.
    pub fn ucontext<T: IbDriver>(&self) -> Option<&'a Ucontext<T>> {
        let raw = core::ptr::from_ref(self.raw).cast_mut();
        // SAFETY: A udata of the core is the `driver_udata` of a bundle (the only kind of
        // udata the core passes to drivers); its context is set for user calls.
        let p = unsafe { ksys::ib_udata_ucontext(raw) };
        // SAFETY: The context of a device of `T` (the driver's own call), initialised by
        // `alloc_ucontext` and alive during the call.
        (!p.is_null()).then(|| unsafe { Ucontext::<T>::from_raw(p) })
    }

    /// The length of the driver request.
    pub fn in_len(&self) -> usize {
        self.raw.inlen
    }

    /// The room for the driver response.
    pub fn out_len(&self) -> usize {
        self.raw.outlen
    }

    /// Reads the driver request as an `R`, the uverbs way (`ib_copy_validate_udata_in()`):
    /// at least `min_len` bytes must have been sent (else `EINVAL`); a shorter request than
    /// `R` (an older library) leaves the rest zero; a longer one (a newer library) must have
    /// only zeroes beyond `R`, else `EOPNOTSUPP` (it asks for something this driver does not
    /// know).
    pub fn read<R: FromBytes + IntoBytes>(&self, min_len: usize) -> Result<R> {
        let len = self.in_len();
        if len < min_len {
            return Err(EINVAL);
        }
        let mut r = R::new_zeroed();
        let n = len.min(size_of::<R>());
        let mut reader = UserSlice::new(UserPtr::from_ptr(self.raw.inbuf.cast_mut()), len).reader();
        reader.read_slice(&mut r.as_mut_bytes()[..n])?;
        let mut chunk = [0u8; 64];
        let mut left = len - n;
        while left > 0 {
            let k = left.min(chunk.len());
            reader.read_slice(&mut chunk[..k])?;
            if chunk[..k].iter().any(|&b| b != 0) {
                return Err(eopnotsupp());
            }
            left -= k;
        }
        Ok(r)
    }

    /// Writes the first `len` bytes of the driver response (a response whose length the
    /// driver reports in it), as much of them as the library has room for.
    pub fn respond_prefix<W: IntoBytes + Immutable>(
        &mut self,
        resp: &W,
        len: usize,
    ) -> Result<usize> {
        let n = self.out_len().min(size_of::<W>()).min(len);
        let mut writer = UserSlice::new(UserPtr::from_ptr(self.raw.outbuf), n).writer();
        writer.write_slice(&resp.as_bytes()[..n])?;
        Ok(n)
    }

    /// Writes the driver response: as much of `resp` as the library has room for (an older
    /// library's shorter response struct gets its prefix). Returns the bytes written.
    pub fn respond<W: IntoBytes + Immutable>(&mut self, resp: &W) -> Result<usize> {
        let n = self.out_len().min(size_of::<W>());
        let mut writer = UserSlice::new(UserPtr::from_ptr(self.raw.outbuf), n).writer();
        writer.write_slice(&resp.as_bytes()[..n])?;
        Ok(n)
    }
}

/// `EOPNOTSUPP`, which the `kernel` crate does not name (the uverbs answer to a request for
/// something the driver does not offer).
pub fn eopnotsupp() -> Error {
    Error::from_errno(-(ksys::EOPNOTSUPP as i32))
}
