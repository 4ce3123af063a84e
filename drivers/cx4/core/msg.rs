// SPDX-License-Identifier: GPL-2.0
//! Command messages: a heap buffer holding a typed PRM layout (the fixed part of a command's
//! input or output) followed by its variable-length tail (`pas[]`, register data, ...).
//!
//! Layouts such as `QUERY_HCA_CAP`'s output are 4 KiB, too large for the kernel stack, so
//! messages always live on the heap and are viewed as their layout through zerocopy.

use core::{
    marker::PhantomData,
    ops::{
        Deref,
        DerefMut, //
    },
};

use cx4_hw::bits::Layout;
use kernel::prelude::*;

/// A zeroed message: layout `T` plus `tail` trailing bytes.
pub(crate) struct Msg<T: Layout> {
    buf: KVec<u8>,
    _t: PhantomData<T>,
}

impl<T: Layout> Msg<T> {
    /// A zeroed message with `tail` bytes after the fixed part.
    pub(crate) fn new(tail: usize) -> Result<Self> {
        let len = T::SIZE.checked_add(tail).ok_or(EINVAL)?;
        Ok(Self {
            buf: KVec::from_elem(0u8, len, GFP_KERNEL)?,
            _t: PhantomData,
        })
    }

    /// Wraps a received buffer; fails if it is shorter than the layout.
    pub(crate) fn from_vec(buf: KVec<u8>) -> Result<Self> {
        if buf.len() < T::SIZE {
            return Err(EIO);
        }
        Ok(Self {
            buf,
            _t: PhantomData,
        })
    }

    /// The whole message.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// The whole message, writable (for the trailing-array helpers of `cx4_hw`).
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.buf
    }

    /// The bytes after the fixed part, writable.
    pub(crate) fn tail_mut(&mut self) -> &mut [u8] {
        &mut self.buf[T::SIZE..]
    }
}

impl<T: Layout> Deref for Msg<T> {
    type Target = T;

    fn deref(&self) -> &T {
        match T::ref_from_prefix(&self.buf) {
            Ok((t, _)) => t,
            // `new` and `from_vec` guarantee at least `T::SIZE` bytes; layouts have alignment 1.
            Err(_) => unreachable!("message shorter than its layout"),
        }
    }
}

impl<T: Layout> DerefMut for Msg<T> {
    fn deref_mut(&mut self) -> &mut T {
        match T::mut_from_prefix(&mut self.buf) {
            Ok((t, _)) => t,
            Err(_) => unreachable!("message shorter than its layout"),
        }
    }
}
