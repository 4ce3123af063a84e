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
/// It is small (at most 64 bytes) so that a driver keeps it per in-flight packet and moves it
/// without a `memcpy`: the first segment is inline, the others (a fragmented packet, e.g. a
/// TSO superframe) in a vector allocated only for them.
///
/// # Invariants
///
/// `first` and then `rest` are mappings of `skb`'s linear part and fragments on `dev`,
/// unmapped only in `unmap_all`.
pub struct TxMapping {
    skb: core::mem::ManuallyDrop<SkBuff>,
    dev: ARef<device::Device>,
    first: Option<DmaSeg>,
    rest: KVec<DmaSeg>,
}

// A driver keeps one per packet in flight and moves it: at most a cache line, so the compiler
// moves it with plain loads and stores.
const _: () = assert!(core::mem::size_of::<TxMapping>() <= 64);

impl TxMapping {
    /// Maps `skb` for `dev` to read (`dma_map_single()` of the linear part,
    /// `skb_frag_dma_map()` of each fragment). On failure, the skb is freed (the packet is
    /// dropped) and the error returned. Called in `ndo_start_xmit` (allocates atomically, and
    /// only for a packet of more than one segment).
    #[inline]
    pub fn new(skb: SkBuff, dev: &device::Device<Bound>) -> Result<Self> {
        let d: &device::Device = dev;
        let mut this = Self {
            skb: core::mem::ManuallyDrop::new(skb),
            dev: d.into(),
            first: None,
            rest: KVec::new(),
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
            this.first = Some(DmaSeg {
                addr,
                len: headlen,
                head: true,
            });
        }
        // SAFETY: The shared info of the owned skb.
        let shinfo = unsafe { &*ksys::skb_shinfo(this.skb.as_raw()) };
        let frags = &shinfo.frags[..usize::from(shinfo.nr_frags)];
        let more = frags.len().saturating_sub(usize::from(this.first.is_none()));
        if more > 0 {
            // Drop on failure: unmaps the linear part, frees the skb.
            this.rest.reserve(more, GFP_ATOMIC)?;
        }
        for f in frags {
            // SAFETY: A fragment of the owned skb, whose page it keeps a reference to.
            let (addr, len) =
                unsafe { (ksys::skb_frag_dma_map(raw_dev, f), ksys::skb_frag_size(f)) };
            // SAFETY: `addr` was just returned for `raw_dev`.
            if unsafe { ksys::dma_mapping_error(raw_dev, addr) } != 0 {
                // Drop: unmaps the segments mapped so far, frees the skb.
                return Err(ENOMEM);
            }
            let seg = DmaSeg {
                addr,
                len,
                head: false,
            };
            if this.first.is_none() {
                this.first = Some(seg);
            } else {
                // Reserved above: does not allocate, cannot fail.
                this.rest.push(seg, GFP_ATOMIC)?;
            }
        }
        Ok(this)
    }

    /// The mapped segments, linear part first.
    #[inline]
    pub fn segs(&self) -> impl Iterator<Item = &DmaSeg> {
        Iterator::chain(self.first.iter(), self.rest.iter())
    }

    /// The packet (read-only: it must not change while mapped).
    #[inline]
    pub fn skb(&self) -> &SkBuff {
        &self.skb
    }

    /// Marks the mapped packet as getting a hardware TX timestamp
    /// ([`SkBuff::set_tstamp_in_progress`]; the mapped bytes are not touched).
    #[inline]
    pub fn set_tstamp_in_progress(&mut self) {
        self.skb.set_tstamp_in_progress();
    }

    /// Takes the mapped packet's software TX timestamp, if requested
    /// ([`SkBuff::tx_timestamp`]; the mapped bytes are not touched): right before the
    /// doorbell.
    #[inline]
    pub fn tx_timestamp(&mut self) {
        self.skb.tx_timestamp();
    }

    fn unmap_all(&mut self) {
        let raw_dev = core::ptr::from_ref::<device::Device>(&self.dev)
            .cast::<ksys::device>()
            .cast_mut();
        let rest = core::mem::take(&mut self.rest);
        for s in Iterator::chain(self.first.take().iter(), rest.iter()) {
            // SAFETY: Each segment was mapped on this device with this length and direction
            // (type invariant) and is unmapped once (both are emptied).
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
    }

    /// Unmaps the packet and gives it back, once the device has read it (its completion).
    #[inline]
    pub fn unmap(mut self) -> SkBuff {
        self.unmap_all();
        // SAFETY: Taken once; `self` is forgotten right after, so its drop does not free it.
        let skb = unsafe { core::mem::ManuallyDrop::take(&mut self.skb) };
        // SAFETY: `dev` is dropped here as `self` would have; `rest` is empty (no allocation)
        // after `unmap_all`, the rest is plain data.
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
