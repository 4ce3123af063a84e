//! The wire format: the 16-byte header, command numbers, flag bits and the fixed-size payload
//! structs of QEMU's `docs/interop/vfio-user.rst` (protocol 0.0).
//!
//! All integers are in host byte order, as the spec requires for `AF_UNIX`. Decoding never
//! panics: every `decode` reads a prefix of its input and returns `None` when it is too short.

use std::fmt;
use std::os::fd::OwnedFd;

/// Size of the header that starts every message.
pub const HEADER_SIZE: usize = 16;

/// Mask of the message-type bits in [`Header::flags`].
pub const FLAG_TYPE_MASK: u32 = 0xf;
/// Message type: a command (request).
pub const TYPE_REQUEST: u32 = 0x0;
/// Message type: a reply to the request with the same message id.
pub const TYPE_REPLY: u32 = 0x1;
/// In a request: the sender wants no reply (QEMU posts BAR writes this way).
pub const FLAG_NO_REPLY: u32 = 0x10;
/// In a reply: the request failed; [`Header::error`] holds the errno.
pub const FLAG_ERROR: u32 = 0x20;

/// `VFIO_DEVICE_FLAGS_RESET`: the device accepts `DEVICE_RESET`.
pub const VFIO_DEVICE_FLAGS_RESET: u32 = 1 << 0;
/// `VFIO_DEVICE_FLAGS_PCI`: the device is a PCI device (the only kind protocol 0.0 knows).
pub const VFIO_DEVICE_FLAGS_PCI: u32 = 1 << 1;

/// `VFIO_REGION_INFO_FLAG_READ`: the client may read the region.
pub const VFIO_REGION_INFO_FLAG_READ: u32 = 1 << 0;
/// `VFIO_REGION_INFO_FLAG_WRITE`: the client may write the region.
pub const VFIO_REGION_INFO_FLAG_WRITE: u32 = 1 << 1;
/// `VFIO_REGION_INFO_FLAG_MMAP`: the client may mmap the fd sent with the region info.
pub const VFIO_REGION_INFO_FLAG_MMAP: u32 = 1 << 2;
/// `VFIO_REGION_INFO_FLAG_CAPS`: a capability chain follows the region info (never sent here).
pub const VFIO_REGION_INFO_FLAG_CAPS: u32 = 1 << 3;

/// `VFIO_IRQ_INFO_EVENTFD`: the IRQ index can signal eventfds.
pub const VFIO_IRQ_INFO_EVENTFD: u32 = 1 << 0;
/// `VFIO_IRQ_INFO_MASKABLE`: MASK/UNMASK actions are supported.
pub const VFIO_IRQ_INFO_MASKABLE: u32 = 1 << 1;
/// `VFIO_IRQ_INFO_AUTOMASKED`: the IRQ masks itself when it fires.
pub const VFIO_IRQ_INFO_AUTOMASKED: u32 = 1 << 2;
/// `VFIO_IRQ_INFO_NORESIZE`: the set of vectors cannot grow without disabling the index.
pub const VFIO_IRQ_INFO_NORESIZE: u32 = 1 << 3;

/// `VFIO_IRQ_SET_DATA_NONE`: no data; act on every sub-index of the range.
pub const VFIO_IRQ_SET_DATA_NONE: u32 = 1 << 0;
/// `VFIO_IRQ_SET_DATA_BOOL`: one byte per sub-index follows; act where it is non-zero.
pub const VFIO_IRQ_SET_DATA_BOOL: u32 = 1 << 1;
/// `VFIO_IRQ_SET_DATA_EVENTFD`: eventfds ride along as `SCM_RIGHTS`; none means de-assign.
pub const VFIO_IRQ_SET_DATA_EVENTFD: u32 = 1 << 2;
/// `VFIO_IRQ_SET_ACTION_MASK`.
pub const VFIO_IRQ_SET_ACTION_MASK: u32 = 1 << 3;
/// `VFIO_IRQ_SET_ACTION_UNMASK`.
pub const VFIO_IRQ_SET_ACTION_UNMASK: u32 = 1 << 4;
/// `VFIO_IRQ_SET_ACTION_TRIGGER`.
pub const VFIO_IRQ_SET_ACTION_TRIGGER: u32 = 1 << 5;
/// All `VFIO_IRQ_SET_DATA_*` bits.
pub const VFIO_IRQ_SET_DATA_TYPE_MASK: u32 = 0x7;
/// All `VFIO_IRQ_SET_ACTION_*` bits.
pub const VFIO_IRQ_SET_ACTION_TYPE_MASK: u32 = 0x38;

/// `DMA_MAP` flag: the server may read the mapping.
pub const DMA_MAP_FLAG_READ: u32 = 1 << 0;
/// `DMA_MAP` flag: the server may write the mapping.
pub const DMA_MAP_FLAG_WRITE: u32 = 1 << 1;
/// `DMA_UNMAP` flag `VFIO_DMA_UNMAP_FLAG_GET_DIRTY_BITMAP` (migration; not supported here).
pub const DMA_UNMAP_FLAG_GET_DIRTY_BITMAP: u32 = 1 << 0;
/// `DMA_UNMAP` flag `VFIO_DMA_UNMAP_FLAG_ALL` from `<linux/vfio.h>`, which QEMU sends (with
/// iova 0, size 0) when the whole address space goes away. The spec calls the field unused.
pub const DMA_UNMAP_FLAG_ALL: u32 = 1 << 1;

/// The largest number of writes QEMU coalesces into one `REGION_WRITE_MULTI`.
pub const WRITE_MULTI_MAX: u64 = 200;
/// Data bytes per `REGION_WRITE_MULTI` entry (writes of at most 8 bytes only).
pub const WRITE_MULTI_DATA: usize = 8;

/// A vfio-user command number. Unknown values are kept as they are.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Command(pub u16);

impl Command {
    /// `VFIO_USER_VERSION`: the handshake.
    pub const VERSION: Self = Self(1);
    /// `VFIO_USER_DMA_MAP`.
    pub const DMA_MAP: Self = Self(2);
    /// `VFIO_USER_DMA_UNMAP`.
    pub const DMA_UNMAP: Self = Self(3);
    /// `VFIO_USER_DEVICE_GET_INFO`.
    pub const DEVICE_GET_INFO: Self = Self(4);
    /// `VFIO_USER_DEVICE_GET_REGION_INFO`.
    pub const DEVICE_GET_REGION_INFO: Self = Self(5);
    /// `VFIO_USER_DEVICE_GET_REGION_IO_FDS` (not supported by this server).
    pub const DEVICE_GET_REGION_IO_FDS: Self = Self(6);
    /// `VFIO_USER_DEVICE_GET_IRQ_INFO`.
    pub const DEVICE_GET_IRQ_INFO: Self = Self(7);
    /// `VFIO_USER_DEVICE_SET_IRQS`.
    pub const DEVICE_SET_IRQS: Self = Self(8);
    /// `VFIO_USER_REGION_READ`.
    pub const REGION_READ: Self = Self(9);
    /// `VFIO_USER_REGION_WRITE`.
    pub const REGION_WRITE: Self = Self(10);
    /// `VFIO_USER_DMA_READ` (server to client).
    pub const DMA_READ: Self = Self(11);
    /// `VFIO_USER_DMA_WRITE` (server to client).
    pub const DMA_WRITE: Self = Self(12);
    /// `VFIO_USER_DEVICE_RESET`.
    pub const DEVICE_RESET: Self = Self(13);
    /// `VFIO_USER_DIRTY_PAGES` (old migration command; not supported).
    pub const DIRTY_PAGES: Self = Self(14);
    /// `VFIO_USER_REGION_WRITE_MULTI`.
    pub const REGION_WRITE_MULTI: Self = Self(15);
    /// `VFIO_USER_DEVICE_FEATURE` (migration; not supported).
    pub const DEVICE_FEATURE: Self = Self(16);
    /// `VFIO_USER_MIG_DATA_READ` (not supported).
    pub const MIG_DATA_READ: Self = Self(17);
    /// `VFIO_USER_MIG_DATA_WRITE` (not supported).
    pub const MIG_DATA_WRITE: Self = Self(18);

    /// The spec's name, or `"UNKNOWN"`.
    pub fn name(self) -> &'static str {
        match self.0 {
            1 => "VERSION",
            2 => "DMA_MAP",
            3 => "DMA_UNMAP",
            4 => "DEVICE_GET_INFO",
            5 => "DEVICE_GET_REGION_INFO",
            6 => "DEVICE_GET_REGION_IO_FDS",
            7 => "DEVICE_GET_IRQ_INFO",
            8 => "DEVICE_SET_IRQS",
            9 => "REGION_READ",
            10 => "REGION_WRITE",
            11 => "DMA_READ",
            12 => "DMA_WRITE",
            13 => "DEVICE_RESET",
            14 => "DIRTY_PAGES",
            15 => "REGION_WRITE_MULTI",
            16 => "DEVICE_FEATURE",
            17 => "MIG_DATA_READ",
            18 => "MIG_DATA_WRITE",
            _ => "UNKNOWN",
        }
    }
}

impl fmt::Debug for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.name(), self.0)
    }
}

/// The header that starts every message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Message id, chosen by the sender of a request and echoed in its reply.
    pub id: u16,
    /// The command.
    pub command: Command,
    /// Size of the whole message, header included.
    pub size: u32,
    /// Type bits (`FLAG_TYPE_MASK`), [`FLAG_NO_REPLY`], [`FLAG_ERROR`].
    pub flags: u32,
    /// Errno of a failed request (valid in replies with [`FLAG_ERROR`]).
    pub error: u32,
}

impl Header {
    /// A request header; `size` is filled in when the message is sent.
    pub fn request(id: u16, command: Command, flags: u32) -> Self {
        Self {
            id,
            command,
            size: 0,
            flags: (flags & !FLAG_TYPE_MASK) | TYPE_REQUEST,
            error: 0,
        }
    }

    /// The success reply header for this request; `size` is filled in when it is sent.
    pub fn reply(&self) -> Self {
        Self {
            id: self.id,
            command: self.command,
            size: 0,
            flags: TYPE_REPLY,
            error: 0,
        }
    }

    /// The header-only error reply for this request.
    pub fn error_reply(&self, errno: crate::Errno) -> Self {
        Self {
            id: self.id,
            command: self.command,
            size: HEADER_SIZE as u32,
            flags: TYPE_REPLY | FLAG_ERROR,
            error: errno.to_wire(),
        }
    }

    /// The message type (`TYPE_REQUEST`, `TYPE_REPLY` or an invalid value).
    pub fn msg_type(&self) -> u32 {
        self.flags & FLAG_TYPE_MASK
    }

    /// A request that wants no reply.
    pub fn no_reply(&self) -> bool {
        self.flags & FLAG_NO_REPLY != 0
    }

    /// A reply that reports an error.
    pub fn is_error(&self) -> bool {
        self.flags & FLAG_ERROR != 0
    }

    /// Decodes the first [`HEADER_SIZE`] bytes of `b`.
    pub fn decode(b: &[u8]) -> Option<Self> {
        Some(Self {
            id: u16_at(b, 0)?,
            command: Command(u16_at(b, 2)?),
            size: u32_at(b, 4)?,
            flags: u32_at(b, 8)?,
            error: u32_at(b, 12)?,
        })
    }

    /// The 16 wire bytes.
    pub fn encode(&self) -> [u8; HEADER_SIZE] {
        let mut out = [0u8; HEADER_SIZE];
        out[0..2].copy_from_slice(&self.id.to_ne_bytes());
        out[2..4].copy_from_slice(&self.command.0.to_ne_bytes());
        out[4..8].copy_from_slice(&self.size.to_ne_bytes());
        out[8..12].copy_from_slice(&self.flags.to_ne_bytes());
        out[12..16].copy_from_slice(&self.error.to_ne_bytes());
        out
    }
}

/// One complete received message.
#[derive(Debug)]
pub struct Message {
    /// Its header.
    pub header: Header,
    /// Everything after the header (`header.size - 16` bytes).
    pub body: Vec<u8>,
    /// File descriptors that arrived with it (closed when dropped).
    pub fds: Vec<OwnedFd>,
}

impl Message {
    /// The errno of an error reply, `None` for anything else.
    pub fn errno(&self) -> Option<crate::Errno> {
        (self.header.msg_type() == TYPE_REPLY && self.header.is_error())
            .then(|| crate::Errno::from_wire(self.header.error))
    }
}

fn array_at<const N: usize>(b: &[u8], off: usize) -> Option<[u8; N]> {
    b.get(off..off.checked_add(N)?)?.try_into().ok()
}

/// Reads a `u16` at byte `off`, if `b` is long enough.
pub fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    array_at(b, off).map(u16::from_ne_bytes)
}

/// Reads a `u32` at byte `off`, if `b` is long enough.
pub fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    array_at(b, off).map(u32::from_ne_bytes)
}

/// Reads a `u64` at byte `off`, if `b` is long enough.
pub fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    array_at(b, off).map(u64::from_ne_bytes)
}

/// Defines a fixed-size payload struct of `u32`/`u64` fields with `SIZE`, `decode`, `encode`.
macro_rules! payload {
    ($(#[$meta:meta])* $name:ident { $($(#[$fmeta:meta])* $field:ident: $ty:ident @ $off:expr),* $(,)? } = $size:expr) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $name {
            $($(#[$fmeta])* pub $field: $ty,)*
        }

        impl $name {
            /// Encoded size in bytes.
            pub const SIZE: usize = $size;

            /// Decodes the first `SIZE` bytes of `b`; `None` if `b` is shorter.
            pub fn decode(b: &[u8]) -> Option<Self> {
                if b.len() < Self::SIZE {
                    return None;
                }
                Some(Self { $($field: payload!(@get $ty, b, $off)?,)* })
            }

            /// The `SIZE` wire bytes.
            pub fn encode(&self) -> Vec<u8> {
                let mut out = vec![0u8; Self::SIZE];
                $(payload!(@put out, $off, self.$field);)*
                out
            }
        }
    };
    (@get u32, $b:expr, $off:expr) => { u32_at($b, $off) };
    (@get u64, $b:expr, $off:expr) => { u64_at($b, $off) };
    (@put $out:expr, $off:expr, $v:expr) => {{
        let bytes = $v.to_ne_bytes();
        if let Some(dst) = $out.get_mut($off..$off + bytes.len()) {
            dst.copy_from_slice(&bytes);
        }
    }};
}

payload! {
    /// `DEVICE_GET_INFO` request and reply (`struct vfio_device_info`).
    DeviceInfoPayload {
        /// Request: room for the reply payload; reply: the size needed (16).
        argsz: u32 @ 0,
        /// `VFIO_DEVICE_FLAGS_*`.
        flags: u32 @ 4,
        /// Number of regions.
        num_regions: u32 @ 8,
        /// Number of IRQ indexes.
        num_irqs: u32 @ 12,
    } = 16
}

payload! {
    /// `DEVICE_GET_REGION_INFO` request and reply (`struct vfio_region_info`).
    RegionInfoPayload {
        /// Request: room for the reply payload; reply: the size needed.
        argsz: u32 @ 0,
        /// `VFIO_REGION_INFO_FLAG_*`.
        flags: u32 @ 4,
        /// Region index.
        index: u32 @ 8,
        /// Offset of the capability chain (0: none).
        cap_offset: u32 @ 12,
        /// Region size in bytes.
        size: u64 @ 16,
        /// Offset to pass to mmap() on the region's fd.
        offset: u64 @ 24,
    } = 32
}

payload! {
    /// `DEVICE_GET_IRQ_INFO` request and reply (`struct vfio_irq_info`).
    IrqInfoPayload {
        /// Request: room for the reply payload; reply: the size needed (16).
        argsz: u32 @ 0,
        /// `VFIO_IRQ_INFO_*`.
        flags: u32 @ 4,
        /// IRQ index.
        index: u32 @ 8,
        /// Number of vectors of this index.
        count: u32 @ 12,
    } = 16
}

payload! {
    /// `DEVICE_SET_IRQS` request (`struct vfio_irq_set`); bool data may follow.
    IrqSetPayload {
        /// Size of this struct plus data.
        argsz: u32 @ 0,
        /// One `VFIO_IRQ_SET_DATA_*` bit and one `VFIO_IRQ_SET_ACTION_*` bit.
        flags: u32 @ 4,
        /// IRQ index.
        index: u32 @ 8,
        /// First sub-index.
        start: u32 @ 12,
        /// Number of sub-indexes.
        count: u32 @ 16,
    } = 20
}

payload! {
    /// `DMA_MAP` request (`struct vfio_iommu_type1_dma_map` with the fd offset).
    DmaMapPayload {
        /// Size of this struct (32).
        argsz: u32 @ 0,
        /// [`DMA_MAP_FLAG_READ`] / [`DMA_MAP_FLAG_WRITE`].
        flags: u32 @ 4,
        /// Offset of the mapping in the passed fd.
        offset: u64 @ 8,
        /// Guest DMA address.
        iova: u64 @ 16,
        /// Size in bytes.
        size: u64 @ 24,
    } = 32
}

payload! {
    /// `DMA_UNMAP` request and reply (`struct vfio_iommu_type1_dma_unmap`).
    DmaUnmapPayload {
        /// Room for the reply payload (24).
        argsz: u32 @ 0,
        /// [`DMA_UNMAP_FLAG_ALL`] or 0.
        flags: u32 @ 4,
        /// Guest DMA address.
        iova: u64 @ 8,
        /// Size in bytes.
        size: u64 @ 16,
    } = 24
}

payload! {
    /// `REGION_READ`/`REGION_WRITE` request and reply head; data follows where the spec says.
    RegionAccessPayload {
        /// Offset in the region.
        offset: u64 @ 0,
        /// Region index.
        region: u32 @ 8,
        /// Number of data bytes.
        count: u32 @ 12,
    } = 16
}

payload! {
    /// One entry of `REGION_WRITE_MULTI` (QEMU's `VFIOUserWROne`); `data` holds up to 8 bytes.
    WriteMultiEntry {
        /// Offset in the region.
        offset: u64 @ 0,
        /// Region index.
        region: u32 @ 8,
        /// Number of valid bytes in `data` (at most 8).
        count: u32 @ 12,
        /// The data bytes, in the first `count` bytes of this field's memory.
        data: u64 @ 16,
    } = 24
}

/// `VERSION` request and reply head; NUL-terminated JSON capabilities may follow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VersionHead {
    /// Major version (0 is the only one).
    pub major: u16,
    /// Minor version.
    pub minor: u16,
}

impl VersionHead {
    /// Encoded size in bytes.
    pub const SIZE: usize = 4;

    /// Decodes the first 4 bytes of `b`; `None` if `b` is shorter.
    pub fn decode(b: &[u8]) -> Option<Self> {
        Some(Self {
            major: u16_at(b, 0)?,
            minor: u16_at(b, 2)?,
        })
    }

    /// The 4 wire bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(Self::SIZE);
        out.extend_from_slice(&self.major.to_ne_bytes());
        out.extend_from_slice(&self.minor.to_ne_bytes());
        out
    }
}

/// Builds a complete request message (header with the right size, then `payload`).
pub fn encode_request(id: u16, command: Command, flags: u32, payload: &[u8]) -> Vec<u8> {
    let mut header = Header::request(id, command, flags);
    header.size = u32::try_from(HEADER_SIZE + payload.len()).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(HEADER_SIZE + payload.len());
    out.extend_from_slice(&header.encode());
    out.extend_from_slice(payload);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip() {
        let h = Header {
            id: 7,
            command: Command::REGION_WRITE,
            size: 40,
            flags: FLAG_NO_REPLY,
            error: 0,
        };
        assert_eq!(Header::decode(&h.encode()), Some(h));
        assert_eq!(Header::decode(&[0u8; 15]), None);
    }

    #[test]
    fn payload_round_trip_and_short_input() {
        let p = RegionInfoPayload {
            argsz: 32,
            flags: 3,
            index: 7,
            cap_offset: 0,
            size: 256,
            offset: 0,
        };
        let b = p.encode();
        assert_eq!(b.len(), RegionInfoPayload::SIZE);
        assert_eq!(RegionInfoPayload::decode(&b), Some(p));
        assert_eq!(RegionInfoPayload::decode(&b[..31]), None);
    }

    #[test]
    fn version_head_is_major_then_minor() {
        let v = VersionHead { major: 0, minor: 3 };
        let mut expect = 0u16.to_ne_bytes().to_vec();
        expect.extend_from_slice(&3u16.to_ne_bytes());
        assert_eq!(v.encode(), expect);
        assert_eq!(VersionHead::decode(&expect), Some(v));
        assert_eq!(VersionHead::decode(&expect[..3]), None);
    }
}
