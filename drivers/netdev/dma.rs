// SPDX-License-Identifier: GPL-2.0
//! Streaming DMA of packets to transmit: [`TxMapping`] maps an skb's linear part and page
//! fragments for the device to read and owns the skb until they are unmapped, so the packet
//! cannot be freed while the device may still read it.

use kernel::{
    device::{
        self,
        Bound, //
    },
    prelude::*,
    sync::aref::ARef,
};

use crate::skb::SkBuff;

/// The most DMA segments of one packet: its linear part and `MAX_SKB_FRAGS` fragments.
pub const MAX_SEGS: usize = ksys::MAX_SKB_FRAGS as usize + 1;

/// One mapped piece of a packet.
#[derive(Clone, Copy, Debug, Default)]
pub struct DmaSeg {
    /// The device (bus) address.
    pub addr: u64,
    /// The length in bytes.
    pub len: u32,
    head: bool,
}

/// An skb mapped for transmission (`DMA_TO_DEVICE`): its linear part (if not empty) then each
/// fragment, in order. Dropping it unmaps the segments, then frees the skb;
/// [`TxMapping::unmap`] unmaps and gives the skb back (e.g. to [`SkBuff::consume`] it).
///
/// # Invariants
///
/// `segs[..n]` are mappings of `skb`'s linear part and fragments on `dev`, unmapped only in
/// `unmap_all`.
pub struct TxMapping {
    skb: core::mem::ManuallyDrop<SkBuff>,
    dev: ARef<device::Device>,
    segs: [DmaSeg; MAX_SEGS],
    n: usize,
}

impl TxMapping {
    /// Maps `skb` for `dev` to read (`dma_map_single()` of the linear part,
    /// `skb_frag_dma_map()` of each fragment). On failure, the skb is freed (the packet is
    /// dropped) and the error returned.
    pub fn new(skb: SkBuff, dev: &device::Device<Bound>) -> Result<Self> {
        let d: &device::Device = dev;
        let mut this = Self {
            skb: core::mem::ManuallyDrop::new(skb),
            dev: d.into(),
            segs: [DmaSeg::default(); MAX_SEGS],
            n: 0,
        };
        // CAST: `device::Device` wraps `bindings::device`, which is `ksys::device`.
        let raw_dev = core::ptr::from_ref(d).cast::<ksys::device>().cast_mut();
        let headlen = this.skb.headlen();
        if headlen != 0 {
            // SAFETY: The linear part is `headlen` bytes at `data` of the owned skb, which
            // stays allocated and unchanged until it is unmapped (we own it).
            let addr = unsafe {
                ksys::dma_map_single(
                    raw_dev,
                    (*this.skb.as_raw()).data.cast(),
                    headlen as usize,
                    ksys::dma_data_direction_DMA_TO_DEVICE,
                )
            };
            // SAFETY: `addr` was just returned for `raw_dev`.
            if unsafe { ksys::dma_mapping_error(raw_dev, addr) } != 0 {
                // Drop: unmaps nothing, frees the skb.
                return Err(ENOMEM);
            }
            this.segs[0] = DmaSeg {
                addr,
                len: headlen,
                head: true,
            };
            this.n = 1;
        }
        // SAFETY: The shared info of the owned skb.
        let shinfo = unsafe { &*ksys::skb_shinfo(this.skb.as_raw()) };
        for f in &shinfo.frags[..usize::from(shinfo.nr_frags)] {
            // SAFETY: A fragment of the owned skb, whose page it keeps a reference to.
            let (addr, len) =
                unsafe { (ksys::skb_frag_dma_map(raw_dev, f), ksys::skb_frag_size(f)) };
            // SAFETY: `addr` was just returned for `raw_dev`.
            if unsafe { ksys::dma_mapping_error(raw_dev, addr) } != 0 {
                // Drop: unmaps the segments mapped so far, frees the skb.
                return Err(ENOMEM);
            }
            // `nr_frags <= MAX_SKB_FRAGS`, so this is in bounds.
            this.segs[this.n] = DmaSeg {
                addr,
                len,
                head: false,
            };
            this.n += 1;
        }
        Ok(this)
    }

    /// The mapped segments, linear part first.
    pub fn segs(&self) -> &[DmaSeg] {
        &self.segs[..self.n]
    }

    /// The packet (read-only: it must not change while mapped).
    pub fn skb(&self) -> &SkBuff {
        &self.skb
    }

    fn unmap_all(&mut self) {
        let raw_dev = core::ptr::from_ref::<device::Device>(&self.dev)
            .cast::<ksys::device>()
            .cast_mut();
        for s in &self.segs[..self.n] {
            // SAFETY: Each segment was mapped on this device with this length and direction
            // (type invariant) and is unmapped once (`n` is reset).
            unsafe {
                if s.head {
                    ksys::dma_unmap_single(
                        raw_dev,
                        s.addr,
                        s.len as usize,
                        ksys::dma_data_direction_DMA_TO_DEVICE,
                    );
                } else {
                    ksys::dma_unmap_page(
                        raw_dev,
                        s.addr,
                        s.len as usize,
                        ksys::dma_data_direction_DMA_TO_DEVICE,
                    );
                }
            }
        }
        self.n = 0;
    }

    /// Unmaps the packet and gives it back, once the device has read it (its completion).
    pub fn unmap(mut self) -> SkBuff {
        self.unmap_all();
        // SAFETY: Taken once; `self` is forgotten right after, so its drop does not free it.
        let skb = unsafe { core::mem::ManuallyDrop::take(&mut self.skb) };
        // SAFETY: `dev` is dropped here as `self` would have; the rest is plain data.
        unsafe { core::ptr::drop_in_place(&mut self.dev) };
        core::mem::forget(self);
        skb
    }
}

impl Drop for TxMapping {
    fn drop(&mut self) {
        self.unmap_all();
        // SAFETY: Unmapped above; dropped once.
        unsafe { core::mem::ManuallyDrop::drop(&mut self.skb) };
    }
}
