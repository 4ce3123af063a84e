// SPDX-License-Identifier: GPL-2.0
//! Socket buffers (`struct sk_buff`, `include/linux/skbuff.h`): [`SkBuff`], an owned packet,
//! with what a transmit path reads (lengths, fragments, checksum and segmentation offload
//! requests, headers' offsets, VLAN tag) and what a receive path sets (protocol, hash,
//! checksum status, VLAN tag, queue).

use core::{
    ptr::NonNull,
    slice, //
};

use kernel::prelude::*;

use crate::{
    napi::NapiContext,
    Device, //
};

/// An owned socket buffer.
///
/// Dropping it frees it (`dev_kfree_skb_any()`, any context); [`SkBuff::consume`] frees a
/// transmitted packet from NAPI (`napi_consume_skb()`, counted as consumed, not dropped).
///
/// # Invariants
///
/// `raw` is a valid skb that this handle owns (nothing else frees it).
pub struct SkBuff {
    raw: NonNull<ksys::sk_buff>,
}

// SAFETY: An skb may be handed to and freed by any thread.
unsafe impl Send for SkBuff {}

// SAFETY: `&SkBuff` methods only read the skb.
unsafe impl Sync for SkBuff {}

/// How the checksum of a packet is (`skb->ip_summed`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checksum {
    /// `CHECKSUM_NONE`: nothing is known / nothing to do.
    None,
    /// `CHECKSUM_UNNECESSARY`: verified (receive).
    Unnecessary,
    /// `CHECKSUM_COMPLETE`: the packet's sum is in `skb->csum` (receive).
    Complete,
    /// `CHECKSUM_PARTIAL`: to be computed by the device from
    /// [`SkBuff::csum_start`] and stored at [`SkBuff::csum_offset`] (transmit).
    Partial,
}

/// The type of a receive hash (`enum pkt_hash_types`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HashType {
    /// `PKT_HASH_TYPE_NONE`.
    None,
    /// `PKT_HASH_TYPE_L2`: over the MAC addresses.
    L2,
    /// `PKT_HASH_TYPE_L3`: over the IP addresses.
    L3,
    /// `PKT_HASH_TYPE_L4`: over the IP addresses and ports (a flow hash).
    L4,
}

/// The segmentation types of a GSO packet (`skb_shinfo(skb)->gso_type`, `SKB_GSO_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GsoType(u32);

impl GsoType {
    /// `SKB_GSO_TCPV4`.
    pub const TCPV4: u32 = ksys::SKB_GSO_TCPV4 as u32;
    /// `SKB_GSO_DODGY`: from an untrusted source.
    pub const DODGY: u32 = ksys::SKB_GSO_DODGY as u32;
    /// `SKB_GSO_TCP_ECN`.
    pub const TCP_ECN: u32 = ksys::SKB_GSO_TCP_ECN as u32;
    /// `SKB_GSO_TCP_FIXEDID`: IPv4 IDs stay fixed.
    pub const TCP_FIXEDID: u32 = ksys::SKB_GSO_TCP_FIXEDID as u32;
    /// `SKB_GSO_TCPV6`.
    pub const TCPV6: u32 = ksys::SKB_GSO_TCPV6 as u32;
    /// `SKB_GSO_GRE`.
    pub const GRE: u32 = ksys::SKB_GSO_GRE as u32;
    /// `SKB_GSO_GRE_CSUM`.
    pub const GRE_CSUM: u32 = ksys::SKB_GSO_GRE_CSUM as u32;
    /// `SKB_GSO_IPXIP4`.
    pub const IPXIP4: u32 = ksys::SKB_GSO_IPXIP4 as u32;
    /// `SKB_GSO_IPXIP6`.
    pub const IPXIP6: u32 = ksys::SKB_GSO_IPXIP6 as u32;
    /// `SKB_GSO_UDP_TUNNEL`.
    pub const UDP_TUNNEL: u32 = ksys::SKB_GSO_UDP_TUNNEL as u32;
    /// `SKB_GSO_UDP_TUNNEL_CSUM`.
    pub const UDP_TUNNEL_CSUM: u32 = ksys::SKB_GSO_UDP_TUNNEL_CSUM as u32;
    /// `SKB_GSO_PARTIAL`: outer headers already per segment.
    pub const PARTIAL: u32 = ksys::SKB_GSO_PARTIAL as u32;
    /// `SKB_GSO_UDP_L4`: UDP segmentation.
    pub const UDP_L4: u32 = ksys::SKB_GSO_UDP_L4 as u32;

    /// The raw `SKB_GSO_*` bits.
    #[inline]
    pub fn bits(self) -> u32 {
        self.0
    }

    /// Whether some bit of `mask` (an `or` of the constants) is set.
    #[inline]
    pub fn intersects(self, mask: u32) -> bool {
        self.0 & mask != 0
    }
}

impl SkBuff {
    /// Takes ownership of `raw`.
    ///
    /// # Safety
    ///
    /// `raw` must be a valid skb whose ownership the caller gives away.
    #[inline]
    pub(crate) unsafe fn from_raw(raw: *mut ksys::sk_buff) -> Self {
        // INVARIANT: The caller's guarantee.
        Self {
            // SAFETY: A valid skb is not NULL.
            raw: unsafe { NonNull::new_unchecked(raw) },
        }
    }

    /// Gives up ownership (the caller hands the skb to C).
    #[inline]
    pub(crate) fn into_raw(self) -> *mut ksys::sk_buff {
        let raw = self.raw.as_ptr();
        core::mem::forget(self);
        raw
    }

    #[inline]
    pub(crate) fn as_raw(&self) -> *mut ksys::sk_buff {
        self.raw.as_ptr()
    }

    #[inline]
    fn shinfo(&self) -> &ksys::skb_shared_info {
        // SAFETY: The skb is valid (type invariant); its shared info lives as long as it and
        // its fields read here are not changed while a handle owns it.
        unsafe { &*ksys::skb_shinfo(self.as_raw()) }
    }

    /// The packet's length, linear part and fragments (`skb->len`).
    #[inline]
    pub fn len(&self) -> u32 {
        // SAFETY: The skb is valid (type invariant).
        unsafe { (*self.as_raw()).len }
    }

    /// Whether the packet is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The length in fragments (`skb->data_len`).
    #[inline]
    pub fn data_len(&self) -> u32 {
        // SAFETY: The skb is valid (type invariant).
        unsafe { (*self.as_raw()).data_len }
    }

    /// The length of the linear part (`skb_headlen()`).
    #[inline]
    pub fn headlen(&self) -> u32 {
        // SAFETY: The skb is valid (type invariant).
        unsafe { ksys::skb_headlen(self.as_raw()) }
    }

    /// The linear part: the headers and possibly some payload (`skb->data`, `headlen` bytes).
    #[inline]
    pub fn data(&self) -> &[u8] {
        // SAFETY: The skb is valid; `data` points to `headlen` bytes of its head, which do
        // not change while this handle owns it and the slice borrows it.
        unsafe { slice::from_raw_parts((*self.as_raw()).data, self.headlen() as usize) }
    }

    /// The number of page fragments (`skb_shinfo(skb)->nr_frags`).
    #[inline]
    pub fn nr_frags(&self) -> usize {
        usize::from(self.shinfo().nr_frags)
    }

    /// The length of each page fragment.
    #[inline]
    pub fn frag_sizes(&self) -> impl Iterator<Item = u32> + '_ {
        let shinfo = self.shinfo();
        shinfo.frags[..self.nr_frags()]
            .iter()
            // SAFETY: A fragment of the valid skb.
            .map(|f| unsafe { ksys::skb_frag_size(f) })
    }

    /// The protocol (the Ethernet type, host order; `skb->protocol`).
    #[inline]
    pub fn protocol(&self) -> u16 {
        // SAFETY: The skb is valid (type invariant).
        u16::from_be(unsafe { ksys::skb_protocol(self.as_raw()) })
    }

    /// The checksum status or request (`skb->ip_summed`).
    #[inline]
    pub fn ip_summed(&self) -> Checksum {
        // SAFETY: The skb is valid (type invariant).
        match u32::from(unsafe { ksys::skb_ip_summed(self.as_raw()) }) {
            ksys::CHECKSUM_UNNECESSARY => Checksum::Unnecessary,
            ksys::CHECKSUM_COMPLETE => Checksum::Complete,
            ksys::CHECKSUM_PARTIAL => Checksum::Partial,
            _ => Checksum::None,
        }
    }

    /// For [`Checksum::Partial`]: where the sum starts, from [`SkBuff::data`]
    /// (`skb_checksum_start_offset()`).
    #[inline]
    pub fn csum_start(&self) -> i32 {
        // SAFETY: The skb is valid (type invariant).
        unsafe { ksys::skb_checksum_start_offset(self.as_raw()) }
    }

    /// For [`Checksum::Partial`]: where the sum goes, from [`SkBuff::csum_start`]
    /// (`skb->csum_offset`).
    #[inline]
    pub fn csum_offset(&self) -> u16 {
        // SAFETY: The skb is valid (type invariant).
        unsafe { ksys::skb_csum_offset(self.as_raw()) }
    }

    /// Whether the packet is encapsulated (a tunnel: the `inner_*` offsets are set;
    /// `skb->encapsulation`).
    #[inline]
    pub fn encapsulation(&self) -> bool {
        // SAFETY: The skb is valid (type invariant).
        unsafe { ksys::skb_encapsulation(self.as_raw()) }
    }

    /// Whether the packet is to be segmented (`skb_is_gso()`).
    #[inline]
    pub fn is_gso(&self) -> bool {
        // SAFETY: The skb is valid (type invariant).
        unsafe { ksys::skb_is_gso(self.as_raw()) }
    }

    /// The segment payload size (MSS) of a GSO packet (`gso_size`).
    #[inline]
    pub fn gso_size(&self) -> u16 {
        self.shinfo().gso_size
    }

    /// The number of segments of a GSO packet (`gso_segs`).
    #[inline]
    pub fn gso_segs(&self) -> u16 {
        self.shinfo().gso_segs
    }

    /// The segmentation types of a GSO packet (`gso_type`).
    #[inline]
    pub fn gso_type(&self) -> GsoType {
        GsoType(self.shinfo().gso_type)
    }

    /// The offset of the (outer) network header from [`SkBuff::data`]
    /// (`skb_network_offset()`).
    #[inline]
    pub fn network_offset(&self) -> i32 {
        // SAFETY: The skb is valid (type invariant).
        unsafe { ksys::skb_network_offset(self.as_raw()) }
    }

    /// The offset of the (outer) transport header (`skb_transport_offset()`).
    #[inline]
    pub fn transport_offset(&self) -> i32 {
        // SAFETY: The skb is valid (type invariant).
        unsafe { ksys::skb_transport_offset(self.as_raw()) }
    }

    /// The offset of the inner network header of an encapsulated packet
    /// (`skb_inner_network_offset()`).
    #[inline]
    pub fn inner_network_offset(&self) -> i32 {
        // SAFETY: The skb is valid (type invariant).
        unsafe { ksys::skb_inner_network_offset(self.as_raw()) }
    }

    /// The offset of the inner transport header (`skb_inner_transport_offset()`).
    #[inline]
    pub fn inner_transport_offset(&self) -> i32 {
        // SAFETY: The skb is valid (type invariant).
        unsafe { ksys::skb_inner_transport_offset(self.as_raw()) }
    }

    /// The length of every header up to the end of TCP's, for a TCP GSO packet
    /// (`skb_tcp_all_headers()`).
    #[inline]
    pub fn tcp_all_headers(&self) -> i32 {
        // SAFETY: The skb is valid (type invariant); the function reads the TCP header at
        // the transport offset, which the stack set for a TCP GSO packet.
        unsafe { ksys::skb_tcp_all_headers(self.as_raw()) }
    }

    /// As [`SkBuff::tcp_all_headers`], up to the end of the inner TCP header of an
    /// encapsulated packet (`skb_inner_tcp_all_headers()`).
    #[inline]
    pub fn inner_tcp_all_headers(&self) -> i32 {
        // SAFETY: As in `tcp_all_headers`, for the inner header.
        unsafe { ksys::skb_inner_tcp_all_headers(self.as_raw()) }
    }

    /// The VLAN tag (TCI) to insert, if any (`skb_vlan_tag_present()`, `skb_vlan_tag_get()`).
    #[inline]
    pub fn vlan_tag(&self) -> Option<u16> {
        // SAFETY: The skb is valid (type invariant).
        unsafe {
            if ksys::skb_vlan_tag_present(self.as_raw()) {
                Some(ksys::skb_vlan_tag_get(self.as_raw()))
            } else {
                None
            }
        }
    }

    /// The TX queue the stack chose (`skb_get_queue_mapping()`).
    #[inline]
    pub fn queue_mapping(&self) -> u16 {
        // SAFETY: The skb is valid (type invariant).
        unsafe { ksys::skb_get_queue_mapping(self.as_raw()) }
    }

    /// Takes the software TX timestamp, if requested (`skb_tx_timestamp()`): in
    /// `start_xmit`, right before the doorbell.
    #[inline]
    pub fn tx_timestamp(&mut self) {
        // SAFETY: The skb is valid and owned (type invariant).
        unsafe { ksys::skb_tx_timestamp(self.as_raw()) };
    }

    /// Whether the packet's socket asked for a hardware TX timestamp
    /// (`skb_shinfo(skb)->tx_flags & SKBTX_HW_TSTAMP`).
    #[inline]
    pub fn hw_tstamp_requested(&self) -> bool {
        self.shinfo().tx_flags & ksys::KSYS_CONST_SKBTX_HW_TSTAMP != 0
    }

    /// Marks the packet as getting a hardware TX timestamp (`SKBTX_IN_PROGRESS`), in
    /// `start_xmit` before [`SkBuff::tx_timestamp`]: no software timestamp then, unless the
    /// socket asked for both. The driver then reports it with [`SkBuff::tstamp_tx`].
    #[inline]
    pub fn set_tstamp_in_progress(&mut self) {
        // SAFETY: The skb is valid and owned (type invariant); the driver's `start_xmit` is
        // the only writer of its shared info's flags here.
        unsafe {
            (*ksys::skb_shinfo(self.as_raw())).tx_flags |= ksys::KSYS_CONST_SKBTX_IN_PROGRESS
        };
    }

    /// Reports the hardware timestamp `ns` (the PHC's time) of the sent packet to its socket's
    /// error queue (`skb_tstamp_tx()` with `hwtstamps`), at its completion.
    #[inline]
    pub fn tstamp_tx(&self, ns: i64) {
        let mut hw = ksys::skb_shared_hwtstamps::default();
        hw.__bindgen_anon_1.hwtstamp = ns;
        // SAFETY: The skb is valid (type invariant); `skb_tstamp_tx` clones what it queues
        // and copies `hw`, which lives for the call.
        unsafe { ksys::skb_tstamp_tx(self.as_raw(), &mut hw) };
    }

    /// Frees a transmitted packet from the NAPI poll that completed it (`napi_consume_skb()`);
    /// `budget` is the poll's (0 from netpoll, where the skb is freed at once).
    #[inline]
    pub fn consume(self, budget: i32) {
        // SAFETY: The skb is owned (type invariant) and given away.
        unsafe { ksys::napi_consume_skb(self.into_raw(), budget) };
    }

    // The receive side.

    /// Allocates an skb of `len` bytes of linear data for the receive path of `napi`
    /// (`napi_alloc_skb()`), with the usual headroom; fill it with [`SkBuff::put`].
    #[inline]
    pub fn alloc_rx(napi: &NapiContext, len: u32) -> Result<Self> {
        // SAFETY: `napi` is a live NAPI instance; we are in its poll (`NapiContext` only
        // exists there).
        let raw = unsafe { ksys::napi_alloc_skb(napi.as_raw(), len) };
        // INVARIANT: A fresh skb, owned by us.
        Ok(Self {
            raw: NonNull::new(raw).ok_or(ENOMEM)?,
        })
    }

    /// Wraps an skb the crate built over a buffer (`napi_build_skb()`).
    ///
    /// # Safety
    ///
    /// `raw` must be NULL or a fresh skb owned by the caller.
    #[inline]
    pub(crate) unsafe fn from_new(raw: *mut ksys::sk_buff) -> Result<Self> {
        // INVARIANT: The caller's guarantee.
        Ok(Self {
            raw: NonNull::new(raw).ok_or(ENOMEM)?,
        })
    }

    /// Free room after the data (`skb_tailroom()`).
    fn tailroom(&self) -> u32 {
        // SAFETY: The skb is valid (type invariant). `tail` and `end` are offsets in the
        // head (NET_SKBUFF_DATA_USES_OFFSET, 64-bit) or pointers; both forms subtract.
        unsafe {
            let s = &*self.as_raw();
            if s.data_len != 0 {
                0
            } else {
                s.end.wrapping_sub(s.tail)
            }
        }
    }

    /// Appends `len` bytes to the linear part and returns them to be filled (`skb_put()`).
    /// `EINVAL` if that does not fit (the C function would panic).
    #[inline]
    pub fn put(&mut self, len: u32) -> Result<&mut [u8]> {
        if len > self.tailroom() {
            return Err(EINVAL);
        }
        // SAFETY: The skb is owned and linear (tailroom != 0 implies no fragments), with
        // `len` bytes of tailroom; the returned bytes belong to it and the slice borrows it.
        unsafe {
            let p = kernel::bindings::skb_put(self.as_raw(), len).cast::<u8>();
            Ok(slice::from_raw_parts_mut(p, len as usize))
        }
    }

    /// Reserves `len` bytes of headroom in an empty skb (`skb_reserve()`).
    #[inline]
    pub fn reserve(&mut self, len: u32) -> Result {
        if !self.is_empty() || len > self.tailroom() {
            return Err(EINVAL);
        }
        // SAFETY: The skb is owned and empty, with room for `len`.
        unsafe { ksys::skb_reserve(self.as_raw(), len as i32) };
        Ok(())
    }

    /// Sets the protocol from the Ethernet header and pulls it (`eth_type_trans()`); sets the
    /// device and the packet type too. The linear part must hold the Ethernet header.
    #[inline]
    pub fn eth_type_trans(&mut self, dev: &Device) -> Result {
        if self.headlen() < ksys::ETH_HLEN {
            return Err(EINVAL);
        }
        // SAFETY: The skb is owned, with the Ethernet header in its linear part; `dev` is a
        // live device. `ksys::net_device` is the full C type `sk_buff.dev` points to.
        unsafe {
            let proto = ksys::eth_type_trans(self.as_raw(), dev.as_raw());
            ksys::skb_set_protocol(self.as_raw(), proto);
        }
        Ok(())
    }

    /// Records the receive hash (`skb_set_hash()`).
    #[inline]
    pub fn set_hash(&mut self, hash: u32, ty: HashType) {
        let ty = match ty {
            HashType::None => ksys::pkt_hash_types_PKT_HASH_TYPE_NONE,
            HashType::L2 => ksys::pkt_hash_types_PKT_HASH_TYPE_L2,
            HashType::L3 => ksys::pkt_hash_types_PKT_HASH_TYPE_L3,
            HashType::L4 => ksys::pkt_hash_types_PKT_HASH_TYPE_L4,
        };
        // SAFETY: The skb is owned (type invariant).
        unsafe { ksys::skb_set_hash(self.as_raw(), hash, ty) };
    }

    /// `CHECKSUM_COMPLETE`: the device's one's complement sum of the packet from the network
    /// header on (`csum`, as the hardware gives it, not folded).
    #[inline]
    pub fn set_csum_complete(&mut self, csum: u32) {
        // SAFETY: The skb is owned (type invariant).
        unsafe {
            ksys::skb_set_csum(self.as_raw(), csum);
            ksys::skb_set_ip_summed(self.as_raw(), ksys::CHECKSUM_COMPLETE as u8);
        }
    }

    /// `CHECKSUM_UNNECESSARY`: the device verified the checksums; `level` is the number of
    /// further (inner) checksums verified beyond the first, 0 to 3 (`csum_level`).
    #[inline]
    pub fn set_csum_unnecessary(&mut self, level: u8) {
        // SAFETY: The skb is owned (type invariant); `csum_level` is two bits wide.
        unsafe {
            ksys::skb_set_ip_summed(self.as_raw(), ksys::CHECKSUM_UNNECESSARY as u8);
            ksys::skb_set_csum_level(self.as_raw(), level.min(3));
        }
    }

    /// `CHECKSUM_NONE`: the stack verifies the checksums.
    #[inline]
    pub fn set_csum_none(&mut self) {
        // SAFETY: The skb is owned (type invariant).
        unsafe { ksys::skb_set_ip_summed(self.as_raw(), ksys::CHECKSUM_NONE as u8) };
    }

    /// Records a stripped 802.1Q VLAN tag (`__vlan_hwaccel_put_tag()` with `ETH_P_8021Q`).
    #[inline]
    pub fn put_vlan_tag(&mut self, tci: u16) {
        // SAFETY: The skb is owned (type invariant).
        unsafe {
            ksys::__vlan_hwaccel_put_tag(self.as_raw(), (ksys::ETH_P_8021Q as u16).to_be(), tci)
        };
    }

    /// Marks a received packet as the merge of `segs` TCP segments of `size` payload bytes
    /// (LRO: `gso_size`, `gso_segs`, `gso_type` of its shared info), so the stack can
    /// resegment it if it forwards it. `gso_type` is one of [`GsoType::TCPV4`] and
    /// [`GsoType::TCPV6`]. `EINVAL` on an skb whose data is shared (a clone).
    #[inline]
    pub fn set_rx_gso(&mut self, size: u16, segs: u16, gso_type: u32) -> Result {
        // SAFETY: The skb is valid (type invariant).
        if unsafe { ksys::skb_cloned(self.as_raw()) } {
            return Err(EINVAL);
        }
        // SAFETY: The skb is owned and not a clone: nothing else reads or writes its shared
        // info while this handle is borrowed mutably.
        unsafe {
            let sh = &mut *ksys::skb_shinfo(self.as_raw());
            sh.gso_size = size;
            sh.gso_segs = segs;
            sh.gso_type = gso_type;
        }
        Ok(())
    }

    /// Sets the hardware receive timestamp, `ns` in the PHC's time
    /// (`skb_hwtstamps(skb)->hwtstamp`).
    #[inline]
    pub fn set_hwtstamp(&mut self, ns: i64) {
        // SAFETY: The skb is valid and owned (type invariant), not yet handed to the stack.
        unsafe {
            (*ksys::skb_hwtstamps(self.as_raw()))
                .__bindgen_anon_1
                .hwtstamp = ns
        };
    }

    /// Records the RX queue the packet came from (`skb_record_rx_queue()`).
    #[inline]
    pub fn record_rx_queue(&mut self, queue: u16) {
        // SAFETY: The skb is owned (type invariant).
        unsafe { ksys::skb_record_rx_queue(self.as_raw(), queue) };
    }
}

impl Drop for SkBuff {
    fn drop(&mut self) {
        // SAFETY: The skb is owned (type invariant) and freed once, from any context.
        unsafe { ksys::dev_kfree_skb_any(self.as_raw()) };
    }
}
