//! Memory keys: CREATE/QUERY/DESTROY_MKEY in PA and MTT access modes, QUERY_SPECIAL_CONTEXTS,
//! and the translation the data path applies to every data segment ([`Firmware::translate`]).
//!
//! An mkey is `index << 8 | variant`: the firmware picks the index, the driver the variant
//! (`mkc.mkey_7_0`); a key whose variant does not match the live mkey is refused.

use cx4_hw::{
    mkey::{
        access_mode, mkey_from_index, mkey_index, CreateMkeyIn, CreateMkeyOut, DestroyMkeyIn,
        QueryMkeyIn, QueryMkeyOut, QuerySpecialContextsOut, TERMINATE_SCATTER_LIST_LKEY,
    },
    opcode,
};

use super::{fail, need_out, req, resp, CmdResult, Ctx, Firmware};

/// The reserved lkey (QUERY_SPECIAL_CONTEXTS `resd_lkey`): addresses are guest physical,
/// without PD or range checks.
pub const RESERVED_LKEY: u32 = 0x200;
/// First mkey index handed out: indices 0..=2 would collide with the terminate (0x100) and
/// reserved (0x200) keys.
pub const FIRST_MKEY_INDEX: u32 = 3;
/// The `qpn` an mkey not bound to a QP carries.
pub const MKEY_QPN_NONE: u32 = 0xff_ffff;

/// How an mkey maps its range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MkeyMap {
    /// Addresses are guest physical.
    Pa,
    /// Pages of `2^page_shift` bytes, virtual page `i` of the range at `pages[i]`.
    Mtt {
        /// log2 of the page size.
        page_shift: u8,
        /// Guest page addresses.
        pages: Vec<u64>,
    },
}

/// One memory key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mkey {
    /// The key (`index << 8 | variant`).
    pub key: u32,
    /// Protection domain.
    pub pd: u32,
    /// Start of the range (virtual address for MTT, physical for PA).
    pub start: u64,
    /// Length of the range; `None` is the whole address space (`length64`).
    pub len: Option<u64>,
    /// Local read, local write, remote read, remote write, atomic.
    pub access: Access,
    /// Mapping.
    pub map: MkeyMap,
}

/// Access rights of an mkey.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Access {
    /// Local read (the device reads through it: send data).
    pub local_read: bool,
    /// Local write (the device writes through it: receive data).
    pub local_write: bool,
    /// Remote read.
    pub remote_read: bool,
    /// Remote write.
    pub remote_write: bool,
    /// Atomics.
    pub atomic: bool,
}

/// Why a data segment's address did not translate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XlateError {
    /// The lkey names no live mkey, or its variant is stale (PRM "bad lkey").
    BadKey,
    /// The terminate key (end of a scatter list), not an address.
    Terminate,
    /// The mkey belongs to another PD, lacks the right, or the range is outside it
    /// (PRM "local protection").
    Protection,
    /// A translated address is not in guest memory (PRM "local length/access").
    NotMapped,
}

impl Firmware {
    pub(super) fn mkey_cmd(
        &mut self,
        ctx: &mut Ctx<'_>,
        op: u16,
        input: &[u8],
        out: &mut [u8],
    ) -> CmdResult {
        need_out(out, 0x10)?;
        match op {
            opcode::CREATE_MKEY => self.create_mkey(ctx, input, out),
            opcode::DESTROY_MKEY => {
                let idx = req::<DestroyMkeyIn>(input)?.mkey_index();
                if self.nic.mkeys.remove(&idx).is_none() {
                    fail!(
                        BAD_RES,
                        "DESTROY_MKEY of an mkey that does not exist",
                        "index {idx:#x}"
                    );
                }
                Ok(())
            }
            opcode::QUERY_MKEY => {
                let idx = req::<QueryMkeyIn>(input)?.mkey_index();
                let Some(m) = self.nic.mkeys.get(&idx) else {
                    fail!(
                        BAD_RES,
                        "QUERY_MKEY of an mkey that does not exist",
                        "index {idx:#x}"
                    );
                };
                let c = resp::<QueryMkeyOut>(out)?.memory_key_mkey_entry_mut();
                c.set_mkey_7_0(m.key & 0xff);
                c.set_pd(m.pd);
                c.set_qpn(MKEY_QPN_NONE);
                c.set_start_addr(m.start);
                c.set_len(m.len.unwrap_or(0));
                c.set_length64(m.len.is_none().into());
                c.set_lr(m.access.local_read.into());
                c.set_lw(m.access.local_write.into());
                c.set_rr(m.access.remote_read.into());
                c.set_rw(m.access.remote_write.into());
                c.set_a(m.access.atomic.into());
                match &m.map {
                    MkeyMap::Pa => c.set_access_mode_1_0(access_mode::PA.into()),
                    MkeyMap::Mtt { page_shift, .. } => {
                        c.set_access_mode_1_0(access_mode::MTT.into());
                        c.set_log_page_size((*page_shift).into());
                    }
                }
                Ok(())
            }
            opcode::QUERY_SPECIAL_CONTEXTS => {
                let o = resp::<QuerySpecialContextsOut>(out)?;
                o.set_resd_lkey(RESERVED_LKEY);
                o.set_terminate_scatter_list_mkey(TERMINATE_SCATTER_LIST_LKEY);
                Ok(())
            }
            _ => unreachable!("dispatched by opcode"),
        }
    }

    fn create_mkey(&mut self, ctx: &mut Ctx<'_>, input: &[u8], out: &mut [u8]) -> CmdResult {
        let inp = req::<CreateMkeyIn>(input)?;
        let c = inp.memory_key_mkey_entry();
        if inp.pg_access() != 0 || inp.mkey_umem_valid() != 0 || c.free() != 0 {
            fail!(
                BAD_PARAM,
                "CREATE_MKEY with on-demand paging, a umem or in the free state"
            );
        }
        let pd = c.pd();
        if !self.pds.contains_key(&pd) {
            fail!(
                BAD_RES,
                "CREATE_MKEY in a PD that does not exist",
                "PD {pd:#x}"
            );
        }
        if c.qpn() != MKEY_QPN_NONE {
            fail!(BAD_PARAM, "CREATE_MKEY bound to a QP", "qpn {:#x}", c.qpn());
        }
        let len = if c.length64() != 0 {
            None
        } else {
            Some(c.len())
        };
        let start = c.start_addr();
        let map = match c.access_mode() as u8 {
            access_mode::PA => MkeyMap::Pa,
            access_mode::MTT => {
                let Some(len) = len else {
                    fail!(BAD_PARAM, "CREATE_MKEY in MTT mode with length64");
                };
                let page_shift = c.log_page_size();
                if !(12..=30).contains(&page_shift) {
                    fail!(
                        BAD_PARAM,
                        "CREATE_MKEY MTT page size out of range",
                        "log_page_size {page_shift}"
                    );
                }
                let page = 1u64 << page_shift;
                let first = start & !(page - 1);
                let Some(end) = start.checked_add(len) else {
                    fail!(BAD_PARAM, "CREATE_MKEY range wraps", "{start:#x}+{len:#x}");
                };
                let npages = (end.div_ceil(page) * page - first) / page;
                let have = c.translations_octword_size() as u64 * 2;
                if npages > have.max(inp.translations_octword_actual_size() as u64 * 2) {
                    fail!(
                        BAD_PARAM,
                        "CREATE_MKEY translation table smaller than the range",
                        "{npages} pages, {have} entries"
                    );
                }
                let mut pages = Vec::with_capacity(npages as usize);
                for i in 0..npages as usize {
                    let Some(pa) = CreateMkeyIn::mtt(input, i) else {
                        fail!(
                            BAD_INP_LEN,
                            "CREATE_MKEY shorter than its MTT entries",
                            "{npages} needed"
                        );
                    };
                    // Bit 0 of an MTT entry is its read-enable flag in some PRM versions; the
                    // address is page aligned.
                    let pa = pa & !1;
                    let mut probe = [0u8; 1];
                    if pa % page != 0 || ctx.mem.read(pa, &mut probe).is_err() {
                        fail!(
                            BAD_PARAM,
                            "CREATE_MKEY MTT entry not an aligned guest page",
                            "entry {i}: {pa:#x}"
                        );
                    }
                    pages.push(pa);
                }
                MkeyMap::Mtt {
                    page_shift: page_shift as u8,
                    pages,
                }
            }
            m => fail!(
                BAD_PARAM,
                "CREATE_MKEY access mode not supported",
                "access mode {m}"
            ),
        };
        let max = 1u64 << self.caps.general("log_max_mkey").min(24);
        if self.nic.mkeys.len() as u64 >= max - u64::from(FIRST_MKEY_INDEX) {
            fail!(NO_RES, "CREATE_MKEY: no mkeys left");
        }
        let idx = (FIRST_MKEY_INDEX..=0xff_ffff)
            .find(|i| !self.nic.mkeys.contains_key(i))
            .expect("fewer mkeys than indices");
        let key = mkey_from_index(idx, c.mkey_7_0() as u8);
        self.nic.mkeys.insert(
            idx,
            Mkey {
                key,
                pd,
                start,
                len,
                access: Access {
                    local_read: c.lr() != 0,
                    local_write: c.lw() != 0,
                    remote_read: c.rr() != 0,
                    remote_write: c.rw() != 0,
                    atomic: c.a() != 0,
                },
                map,
            },
        );
        resp::<CreateMkeyOut>(out)?.set_mkey_index(idx);
        Ok(())
    }

    /// The mkey an lkey/rkey names, if live and of the same variant.
    pub fn mkey(&self, key: u32) -> Option<&Mkey> {
        self.nic
            .mkeys
            .get(&mkey_index(key))
            .filter(|m| m.key == key)
    }

    /// Translates `len` bytes at `addr` through `lkey` for a queue in protection domain `pd`,
    /// for the device to write (`write`, receive data) or read (send data): the guest
    /// physical pieces, in order. The reserved lkey passes addresses through; every piece is
    /// checked against guest memory.
    pub fn translate(
        &self,
        mem: &crate::guest_mem::GuestMem,
        lkey: u32,
        pd: u32,
        addr: u64,
        len: u32,
        write: bool,
    ) -> Result<Vec<(u64, u32)>, XlateError> {
        let mapped = |pa: u64, n: u32| -> bool {
            let mut probe = [0u8; 1];
            n == 0
                || (pa.checked_add(u64::from(n) - 1).is_some()
                    && mem.read(pa, &mut probe).is_ok()
                    && mem.read(pa + u64::from(n) - 1, &mut probe).is_ok())
        };
        if lkey == RESERVED_LKEY {
            return if mapped(addr, len) {
                Ok(vec![(addr, len)])
            } else {
                Err(XlateError::NotMapped)
            };
        }
        if lkey == TERMINATE_SCATTER_LIST_LKEY {
            return Err(XlateError::Terminate);
        }
        let m = self.mkey(lkey).ok_or(XlateError::BadKey)?;
        let allowed = if write {
            m.access.local_write
        } else {
            m.access.local_read
        };
        if m.pd != pd || !allowed {
            return Err(XlateError::Protection);
        }
        let end = addr
            .checked_add(u64::from(len))
            .ok_or(XlateError::Protection)?;
        if let Some(l) = m.len {
            if addr < m.start || end > m.start.saturating_add(l) {
                return Err(XlateError::Protection);
            }
        }
        let pieces = match &m.map {
            MkeyMap::Pa => vec![(addr, len)],
            MkeyMap::Mtt { page_shift, pages } => {
                let page = 1u64 << page_shift;
                let base = m.start & !(page - 1);
                let mut v = Vec::new();
                let mut a = addr;
                while a < end {
                    let i = ((a - base) >> page_shift) as usize;
                    let in_page = a & (page - 1);
                    let n = (page - in_page).min(end - a);
                    let pa = pages.get(i).ok_or(XlateError::Protection)? + in_page;
                    v.push((pa, n as u32));
                    a += n;
                }
                v
            }
        };
        if pieces.iter().all(|&(pa, n)| mapped(pa, n)) {
            Ok(pieces)
        } else {
            Err(XlateError::NotMapped)
        }
    }
}
