//! `VERSION` capabilities: the JSON object each side sends after the version numbers.
//!
//! The data is UTF-8 JSON, NUL-terminated, of the form `{"capabilities": {...}}`. Every field
//! is optional; a missing one takes the spec's default. Unknown fields are ignored; a known
//! field of the wrong type makes the whole message invalid (`EINVAL`).

use serde_json::{Map, Value};

/// Capability keys, as in QEMU's `hw/vfio-user/protocol.h`.
pub mod key {
    /// Descriptors the sender can receive in one message (default 1).
    pub const MAX_MSG_FDS: &str = "max_msg_fds";
    /// Largest data `count` of region/DMA read and write messages (default 1 MiB).
    pub const MAX_DATA_XFER_SIZE: &str = "max_data_xfer_size";
    /// DMA page sizes or'ed together (default 4096).
    pub const PGSIZES: &str = "pgsizes";
    /// Most DMA mappings at once (default 65535).
    pub const MAX_DMA_MAPS: &str = "max_dma_maps";
    /// `REGION_WRITE_MULTI` is understood (default false).
    pub const WRITE_MULTIPLE: &str = "write_multiple";
    /// Migration parameters (object; this crate supports no migration).
    pub const MIGRATION: &str = "migration";
    /// Separate server-to-client socket (object; not implemented here).
    pub const TWIN_SOCKET: &str = "twin_socket";
}

/// The capabilities one side of a connection announced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caps {
    /// Descriptors the announcing side accepts in one message.
    pub max_msg_fds: u64,
    /// Largest data transfer the announcing side accepts in one message.
    pub max_data_xfer_size: u64,
    /// DMA page sizes.
    pub pgsizes: u64,
    /// Most simultaneous DMA mappings.
    pub max_dma_maps: u64,
    /// `REGION_WRITE_MULTI` support.
    pub write_multiple: bool,
    /// Which of the keys in [`key`] were present (a reply may only contain keys that were
    /// proposed). Only set by [`Caps::parse`].
    pub present: Vec<&'static str>,
}

impl Default for Caps {
    /// The spec's defaults for a peer that announced nothing.
    fn default() -> Self {
        Self {
            max_msg_fds: 1,
            max_data_xfer_size: 1 << 20,
            pgsizes: 4096,
            max_dma_maps: 65535,
            write_multiple: false,
            present: Vec::new(),
        }
    }
}

fn number(
    caps: &Map<String, Value>,
    name: &'static str,
    present: &mut Vec<&'static str>,
) -> Result<Option<u64>, String> {
    match caps.get(name) {
        None => Ok(None),
        Some(v) => {
            present.push(name);
            v.as_u64()
                .map(Some)
                .ok_or_else(|| format!("{name} is not an unsigned integer: {v}"))
        }
    }
}

impl Caps {
    /// Parses the version data that follows major/minor in a `VERSION` message.
    ///
    /// `data` may be empty (all defaults), NUL-terminated (bytes after the first NUL are
    /// ignored) or unterminated.
    pub fn parse(data: &[u8]) -> Result<Self, String> {
        let text = data.split(|&b| b == 0).next().unwrap_or_default();
        if text.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self::default());
        }
        let root: Value =
            serde_json::from_slice(text).map_err(|e| format!("version data is not JSON: {e}"))?;
        let root = root
            .as_object()
            .ok_or("version data is not a JSON object")?;
        let mut caps = Self::default();
        let Some(obj) = root.get("capabilities") else {
            return Ok(caps);
        };
        let obj = obj.as_object().ok_or("capabilities is not an object")?;
        let mut present = Vec::new();
        if let Some(v) = number(obj, key::MAX_MSG_FDS, &mut present)? {
            caps.max_msg_fds = v;
        }
        if let Some(v) = number(obj, key::MAX_DATA_XFER_SIZE, &mut present)? {
            caps.max_data_xfer_size = v;
        }
        if let Some(v) = number(obj, key::PGSIZES, &mut present)? {
            caps.pgsizes = v;
        }
        if let Some(v) = number(obj, key::MAX_DMA_MAPS, &mut present)? {
            caps.max_dma_maps = v;
        }
        if let Some(v) = obj.get(key::WRITE_MULTIPLE) {
            present.push(key::WRITE_MULTIPLE);
            caps.write_multiple = v.as_bool().ok_or("write_multiple is not a boolean")?;
        }
        for name in [key::MIGRATION, key::TWIN_SOCKET] {
            if let Some(v) = obj.get(name) {
                present.push(name);
                if !v.is_object() {
                    return Err(format!("{name} is not an object"));
                }
            }
        }
        caps.present = present;
        Ok(caps)
    }

    /// The NUL-terminated version data announcing `self`, limited to the keys in `only` if
    /// given (a server replies with a subset of what the client proposed). `migration` and
    /// `twin_socket` are never announced.
    pub fn to_version_data(&self, only: Option<&[&'static str]>) -> Vec<u8> {
        let wanted = |k: &str| only.is_none_or(|keys| keys.contains(&k));
        let mut obj = Map::new();
        let mut put = |k: &'static str, v: Value| {
            if wanted(k) {
                obj.insert(k.to_string(), v);
            }
        };
        put(key::MAX_MSG_FDS, self.max_msg_fds.into());
        put(key::MAX_DATA_XFER_SIZE, self.max_data_xfer_size.into());
        put(key::PGSIZES, self.pgsizes.into());
        put(key::MAX_DMA_MAPS, self.max_dma_maps.into());
        if self.write_multiple {
            put(key::WRITE_MULTIPLE, true.into());
        }
        let mut root = Map::new();
        root.insert("capabilities".to_string(), Value::Object(obj));
        let mut out = Value::Object(root).to_string().into_bytes();
        out.push(0);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What QEMU 11 sends (`caps_json()` in hw/vfio-user/proxy.c).
    const QEMU: &str = r#"{"capabilities": {"migration": {"pgsize": 4096, "max_bitmap_size": 268435456}, "max_msg_fds": 16, "max_data_xfer_size": 1048576, "pgsizes": 4096, "max_dma_maps": 65535, "write_multiple": true}}"#;

    #[test]
    fn parses_qemu_caps() {
        let mut data = QEMU.as_bytes().to_vec();
        data.push(0);
        let c = Caps::parse(&data).unwrap();
        assert_eq!(c.max_msg_fds, 16);
        assert_eq!(c.max_data_xfer_size, 1 << 20);
        assert!(c.write_multiple);
        assert!(c.present.contains(&key::MIGRATION));
    }

    #[test]
    fn empty_and_missing_mean_defaults() {
        assert_eq!(Caps::parse(b"").unwrap(), Caps::default());
        assert_eq!(Caps::parse(b"\0").unwrap(), Caps::default());
        assert_eq!(Caps::parse(b"{}\0").unwrap(), Caps::default());
    }

    #[test]
    fn wrong_types_and_garbage_are_errors() {
        for bad in [
            &b"{not json"[..],
            b"[1,2]",
            b"{\"capabilities\": 3}",
            b"{\"capabilities\": {\"max_msg_fds\": -1}}",
            b"{\"capabilities\": {\"max_msg_fds\": 1.5}}",
            b"{\"capabilities\": {\"write_multiple\": 1}}",
            b"{\"capabilities\": {\"migration\": 1}}",
            b"\xff\xfe",
        ] {
            assert!(
                Caps::parse(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn reply_is_a_subset_and_nul_terminated() {
        let ours = Caps {
            max_msg_fds: 16,
            write_multiple: true,
            ..Caps::default()
        };
        let data = ours.to_version_data(Some(&[key::MAX_MSG_FDS]));
        assert_eq!(data.last(), Some(&0));
        assert_eq!(
            &data[..data.len() - 1],
            br#"{"capabilities":{"max_msg_fds":16}}"#
        );
        let back = Caps::parse(&ours.to_version_data(None)).unwrap();
        assert_eq!((back.max_msg_fds, back.write_multiple), (16, true));
    }
}
