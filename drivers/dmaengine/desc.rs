// SPDX-License-Identifier: GPL-2.0
//! Descriptors: [`DescBox`] (the C descriptor a client holds and the provider's part, in one
//! box), the FIFO [`List`]s the channel keeps them on, and the view of the active ones that
//! [`Operations::process`] gets ([`Active`], [`Entry`], [`Finisher`]).

use core::ptr::{
    self,
    NonNull, //
};

use kernel::types::Opaque;

use crate::{
    Operations,
    Status, //
};

/// A descriptor: the C descriptor the client holds, and the provider's part.
///
/// # Invariants
///
/// `txd` is first (`#[repr(C)]`): a `*mut dma_async_tx_descriptor` handed out by this crate is
/// a `*mut DescBox<T>`. `result` is null, or the client's `sum_check_flags` of a validation,
/// valid until the descriptor's callback has run. `desc` is `None` only for a refused request
/// (a bad address), which is `finished` from the start.
#[repr(C)]
pub(crate) struct DescBox<T: Operations> {
    pub(crate) txd: Opaque<ksys::dma_async_tx_descriptor>,
    pub(crate) next: *mut DescBox<T>,
    pub(crate) status: Option<Status>,
    pub(crate) result: *mut ksys::sum_check_flags,
    pub(crate) cookie: i32,
    pub(crate) finished: bool,
    pub(crate) desc: Option<T::Desc>,
}

/// A submitted descriptor, as [`Operations::process`] sees it.
pub struct Entry<'a, T: Operations> {
    cookie: i32,
    finished: bool,
    /// The provider's part.
    pub desc: &'a mut T::Desc,
}

impl<T: Operations> Entry<'_, T> {
    /// The descriptor's cookie (unique among the active descriptors; positive).
    pub fn cookie(&self) -> i32 {
        self.cookie
    }

    /// Whether [`Entry::finish`] was called.
    pub fn is_finished(&self) -> bool {
        self.finished
    }
}

/// A singly linked FIFO of descriptors.
pub(crate) struct List<T: Operations> {
    pub(crate) head: *mut DescBox<T>,
    pub(crate) tail: *mut DescBox<T>,
}

impl<T: Operations> List<T> {
    pub(crate) const fn new() -> Self {
        Self {
            head: ptr::null_mut(),
            tail: ptr::null_mut(),
        }
    }

    /// Appends `d`.
    ///
    /// # Safety
    ///
    /// `d` is a live descriptor in no list.
    pub(crate) unsafe fn push(&mut self, d: *mut DescBox<T>) {
        // SAFETY: `d` is live and in no list (the caller's guarantee); `tail`, if not null, is
        // a live descriptor of this list.
        unsafe {
            (*d).next = ptr::null_mut();
            if self.tail.is_null() {
                self.head = d;
            } else {
                (*self.tail).next = d;
            }
        }
        self.tail = d;
    }

    /// Removes and returns the first descriptor.
    pub(crate) fn pop(&mut self) -> Option<*mut DescBox<T>> {
        let d = NonNull::new(self.head)?.as_ptr();
        // SAFETY: `d` is a live descriptor of this list.
        self.head = unsafe { (*d).next };
        if self.head.is_null() {
            self.tail = ptr::null_mut();
        }
        Some(d)
    }
}

/// The active descriptors, in cookie order (the argument of [`Operations::process`]).
pub struct Active<'a, T: Operations> {
    pub(crate) list: &'a mut List<T>,
}

impl<T: Operations> Active<'_, T> {
    /// Visits every active descriptor in cookie order until `f` returns `false`.
    /// (A refused request, which has no provider part, is not visited.)
    pub fn for_each(&mut self, mut f: impl FnMut(&mut Entry<'_, T>, &mut Finisher) -> bool) {
        let mut d = self.list.head;
        while !d.is_null() {
            // SAFETY: `d` is a live descriptor of the active list, which the channel lock
            // (held by our caller) protects; nothing else refers to it meanwhile.
            let b = unsafe { &mut *d };
            d = b.next;
            let Some(desc) = b.desc.as_mut() else {
                continue;
            };
            let mut e = Entry {
                cookie: b.cookie,
                finished: b.finished,
                desc,
            };
            let mut fin = Finisher(None);
            let go = f(&mut e, &mut fin);
            if let Some(s) = fin.0 {
                if !b.finished {
                    b.finished = true;
                    b.status = Some(s);
                }
            }
            if !go {
                break;
            }
        }
    }

    /// The active descriptor with `cookie`, if any.
    pub fn find(&mut self, cookie: i32, f: impl FnOnce(&mut Entry<'_, T>, &mut Finisher)) {
        let mut once = Some(f);
        self.for_each(|e, fin| {
            if e.cookie == cookie {
                if let Some(f) = once.take() {
                    f(e, fin);
                }
                return false;
            }
            true
        });
    }

    /// Whether no descriptor is active.
    pub fn is_empty(&self) -> bool {
        self.list.head.is_null()
    }
}

/// Ends a descriptor from [`Active::for_each`]: `fin.finish(status)`.
pub struct Finisher(Option<Status>);

impl Finisher {
    /// Ends the descriptor with `status` (the first call counts). Its callback runs once
    /// every earlier descriptor has ended too.
    pub fn finish(&mut self, status: Status) {
        if self.0.is_none() {
            self.0 = Some(status);
        }
    }
}
