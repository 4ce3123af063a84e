//! Memory keys: CREATE/QUERY/DESTROY_MKEY in PA, MTT, KLMS and KSM access modes,
//! QUERY_SPECIAL_CONTEXTS, and the translation the data path applies to every data segment
//! ([`Firmware::translate`]; the walk through indirect mkeys is in `mkey_map.rs`).
//!
//! An mkey is `index << 8 | variant`: the firmware picks the index, the driver the variant
//! (`mkc.mkey_7_0`); a key whose variant does not match the live mkey is refused. An mkey may
//! be created free (`mkc.free`, as mlx5_ib's `ib_alloc_mr` does) for UMR WQEs to fill in
//! later (`roce/umr.rs`); a free mkey translates nothing.

use cx4_hw::{
    command::{self as cmds, Command},
    mkey::{access_mode, mkey_from_index, mkey_index, CreateMkeyIn, TERMINATE_SCATTER_LIST_LKEY},
};

use super::{cmd_in, cmd_out, fail, need_out, Bus, CmdResult, Firmware};

/// The reserved lkey (QUERY_SPECIAL_CONTEXTS `resd_lkey`): addresses are guest physical,
/// without PD or range checks.
pub const RESERVED_LKEY: u32 = 0x200;
/// First mkey index handed out: indices 0..=2 would collide with the terminate (0x100) and
/// reserved (0x200) keys.
pub const FIRST_MKEY_INDEX: u32 = 3;
/// The null mkey (QUERY_SPECIAL_CONTEXTS `null_mkey`, with the `null_mkey` capability): an
/// indirect mkey's entry naming it maps nothing, and an access through it page-faults (the
/// absent children of mlx5_ib's implicit ODP MR). Never a live mkey (index 0 is not handed
/// out), so it means nothing as an lkey of its own.
pub const NULL_MKEY: u32 = 0;
/// The MTT entry bit that lets the device read the page (`MLX5_IB_MTT_READ`).
pub const MTT_READ: u8 = 1 << 0;
/// The MTT entry bit that lets the device write the page (`MLX5_IB_MTT_WRITE`).
pub const MTT_WRITE: u8 = 1 << 1;
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
        /// Each page's read/write enables ([`MTT_READ`], [`MTT_WRITE`]: the entry's low bits),
        /// honoured with the `pg` capability: an access a page's enables do not allow is a
        /// page fault (on-demand paging). Entries of a CREATE_MKEY without `pg_access` allow
        /// both.
        enables: Vec<u8>,
    },
    /// Indirect (KLMS): the range is the concatenation of the entries' byte ranges, each
    /// in another mkey.
    Klm {
        /// The entries, in order.
        entries: Vec<IndirectEntry>,
    },
    /// Indirect with fixed-size entries (KSM): entry `i` holds bytes
    /// `i << page_shift..(i + 1) << page_shift` of the range.
    Ksm {
        /// log2 of the entry size.
        page_shift: u8,
        /// The entries (their `len` is unused).
        entries: Vec<IndirectEntry>,
    },
    /// Indirect (KLMS) with a repeat block (`roce/umr.rs`, libmlx5's pattern mkey): the range
    /// is `count` repetitions of the entries' pieces, entry j's piece of repetition r at
    /// `va + r·stride` of its key.
    Repeat {
        /// Bytes of one repetition (the sum of the entries' lengths).
        block: u32,
        /// Repetitions.
        count: u32,
        /// The entries, in order within a repetition.
        entries: Vec<RepeatEntry>,
    },
}

/// One entry of a repeat block (`struct mlx5_seg_repeat_ent`): `len` bytes per repetition at
/// `va + r·stride` of mkey `key`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RepeatEntry {
    /// Bytes per repetition.
    pub len: u16,
    /// Bytes between two repetitions' pieces (0: all on the same bytes).
    pub stride: u16,
    /// The mkey the pieces are in.
    pub key: u32,
    /// Address of repetition 0's piece.
    pub va: u64,
}

/// One entry of an indirect mkey: `len` bytes at `va` of the mkey `key` (`struct mlx5_klm`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IndirectEntry {
    /// Byte count (KLM).
    pub len: u32,
    /// The mkey the bytes are in.
    pub key: u32,
    /// Their address in that mkey.
    pub va: u64,
}

impl IndirectEntry {
    /// A 16-byte KLM or KSM entry as the guest wrote it (big endian: byte count, key, va).
    pub fn from_bytes(b: &[u8]) -> IndirectEntry {
        let be32 = |at: usize| u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        IndirectEntry {
            len: be32(0),
            key: be32(4),
            va: (u64::from(be32(8)) << 32) | u64::from(be32(12)),
        }
    }
}

impl MkeyMap {
    /// The access mode code of the map (`MLX5_MKC_ACCESS_MODE_*`).
    pub fn access_mode(&self) -> u8 {
        match self {
            MkeyMap::Pa => access_mode::PA,
            MkeyMap::Mtt { .. } => access_mode::MTT,
            MkeyMap::Klm { .. } | MkeyMap::Repeat { .. } => access_mode::KLMS,
            MkeyMap::Ksm { .. } => access_mode::KSM,
        }
    }

    /// Bytes one translation entry takes (MTT 8, KLM and KSM 16; PA none).
    pub fn entry_bytes(&self) -> usize {
        match self {
            MkeyMap::Pa => 0,
            MkeyMap::Mtt { .. } => 8,
            MkeyMap::Klm { .. } | MkeyMap::Ksm { .. } | MkeyMap::Repeat { .. } => 16,
        }
    }
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
    /// Free: not usable for any access until a UMR makes it valid (`mkc.free`).
    pub free: bool,
    /// UMR WQEs may change it (`mkc.umr_en`).
    pub umr_en: bool,
    /// A SEND with invalidate may invalidate it (`mkc.en_rinval`).
    pub remote_inval: bool,
    /// The QP it is bound to ([`MKEY_QPN_NONE`]: none).
    pub qpn: u32,
    /// Size of its translation table in 16-byte units (`mkc.translations_octword_size`,
    /// at least what CREATE_MKEY filled in): how many entries a UMR may write.
    pub xlt_octowords: u64,
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
    /// A page on the way is not present (its MTT enables lack the access, or an indirect
    /// entry names the null mkey) on a card with `pg`: the queue raises a page fault and
    /// waits for PAGE_FAULT_RESUME (`roce/odp.rs`); elsewhere it fails as
    /// [`XlateError::Protection`].
    PageFault,
}

impl Firmware {
    pub(super) fn mkey_cmd(
        &mut self,
        ctx: &mut Bus,
        op: u16,
        input: &[u8],
        out: &mut [u8],
    ) -> CmdResult {
        need_out(out, 0x10)?;
        match op {
            cmds::CreateMkey::OPCODE => self.create_mkey(ctx, input, out),
            cmds::DestroyMkey::OPCODE => {
                let idx = cmd_in::<cmds::DestroyMkey>(input)?.mkey_index();
                if self.nic.mkeys.remove(&idx).is_none() {
                    fail!(
                        BAD_RES,
                        "DESTROY_MKEY of an mkey that does not exist",
                        "index {idx:#x}"
                    );
                }
                Ok(())
            }
            cmds::QueryMkey::OPCODE => {
                let idx = cmd_in::<cmds::QueryMkey>(input)?.mkey_index();
                let Some(m) = self.nic.mkeys.get(&idx) else {
                    fail!(
                        BAD_RES,
                        "QUERY_MKEY of an mkey that does not exist",
                        "index {idx:#x}"
                    );
                };
                let c = cmd_out::<cmds::QueryMkey>(out)?.memory_key_mkey_entry_mut();
                c.set_mkey_7_0(m.key & 0xff);
                c.set_pd(m.pd);
                c.set_qpn(m.qpn);
                c.set_free(m.free.into());
                c.set_umr_en(m.umr_en.into());
                c.set_en_rinval(m.remote_inval.into());
                c.set_translations_octword_size(m.xlt_octowords.min(u32::MAX.into()) as u32);
                c.set_start_addr(m.start);
                c.set_len(m.len.unwrap_or(0));
                c.set_length64(m.len.is_none().into());
                c.set_lr(m.access.local_read.into());
                c.set_lw(m.access.local_write.into());
                c.set_rr(m.access.remote_read.into());
                c.set_rw(m.access.remote_write.into());
                c.set_a(m.access.atomic.into());
                c.set_access_mode_1_0(m.map.access_mode().into());
                match &m.map {
                    MkeyMap::Mtt { page_shift, .. } | MkeyMap::Ksm { page_shift, .. } => {
                        c.set_log_page_size((*page_shift).into());
                    }
                    MkeyMap::Pa | MkeyMap::Klm { .. } | MkeyMap::Repeat { .. } => {}
                }
                Ok(())
            }
            cmds::QuerySpecialContexts::OPCODE => {
                let o = cmd_out::<cmds::QuerySpecialContexts>(out)?;
                o.set_resd_lkey(RESERVED_LKEY);
                o.set_terminate_scatter_list_mkey(TERMINATE_SCATTER_LIST_LKEY);
                if self.caps.general("null_mkey") != 0 {
                    o.set_null_mkey(NULL_MKEY);
                }
                Ok(())
            }
            cmds::PageFaultResume::OPCODE => {
                if self.caps.general("pg") == 0 {
                    fail!(BAD_OP, "PAGE_FAULT_RESUME on a card without pg");
                }
                // wq_number names the QP for both kinds (odp.c mlx5_ib_page_fault_resume: an
                // RDMA fault's token is its QP number).
                let i = cmd_in::<cmds::PageFaultResume>(input)?.page_fault_info();
                self.rdma.pf_resumes.push(super::rdma::PfResume {
                    ty: i.page_fault_type() as u8,
                    qpn: i.wq_number(),
                    error: i.error() != 0,
                });
                Ok(())
            }
            _ => unreachable!("dispatched by opcode"),
        }
    }

    fn create_mkey(&mut self, ctx: &mut Bus, input: &[u8], out: &mut [u8]) -> CmdResult {
        let inp = cmd_in::<cmds::CreateMkey>(input)?;
        let c = inp.memory_key_mkey_entry();
        if inp.mkey_umem_valid() != 0 {
            fail!(BAD_PARAM, "CREATE_MKEY with a umem");
        }
        // pg_access: the MTT entries' enables count (mr.c reg_create with the pg capability).
        let pg_access = inp.pg_access() != 0;
        if pg_access && self.caps.general("pg") == 0 {
            fail!(BAD_PARAM, "CREATE_MKEY with pg_access on a card without pg");
        }
        let free = c.free() != 0;
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
                let mut npages = (end.div_ceil(page) * page - first) / page;
                let have = c.translations_octword_size() as u64 * 2;
                if free {
                    // Filled in by UMR later (mlx5_ib's ib_alloc_mr and its free cache
                    // mkeys pass no entries).
                    npages = npages.min(inp.translations_octword_actual_size() as u64 * 2);
                }
                if npages > have.max(inp.translations_octword_actual_size() as u64 * 2) {
                    fail!(
                        BAD_PARAM,
                        "CREATE_MKEY translation table smaller than the range",
                        "{npages} pages, {have} entries"
                    );
                }
                let mut pages = Vec::with_capacity(npages as usize);
                let mut enables = Vec::with_capacity(npages as usize);
                for i in 0..npages as usize {
                    let Some(pa) = CreateMkeyIn::mtt(input, i) else {
                        fail!(
                            BAD_INP_LEN,
                            "CREATE_MKEY shorter than its MTT entries",
                            "{npages} needed"
                        );
                    };
                    // Bits 0 and 1 of an MTT entry are its read and write enables; the
                    // address is page aligned.
                    let en = if pg_access {
                        (pa & 3) as u8
                    } else {
                        MTT_READ | MTT_WRITE
                    };
                    let pa = pa & !3;
                    let mut probe = [0u8; 1];
                    if pa % page != 0 || ctx.mem.read(pa, &mut probe).is_err() {
                        fail!(
                            BAD_PARAM,
                            "CREATE_MKEY MTT entry not an aligned guest page",
                            "entry {i}: {pa:#x}"
                        );
                    }
                    pages.push(pa);
                    enables.push(en);
                }
                MkeyMap::Mtt {
                    page_shift: page_shift as u8,
                    pages,
                    enables,
                }
            }
            mode @ (access_mode::KLMS | access_mode::KSM) => {
                // `log_max_klm_list_size` bounds KLM lists. A KSM table is not bounded by
                // it: mlx5_ib's implicit ODP MR is a KSM mkey of one entry per 1 GiB of the
                // process's address space (odp.c `mlx5_imr_ksm_entries`, 2^17 on x86-64),
                // created with no check against the cap, as on the real card; the model's own
                // table bound (2^24 entries) keeps a guest from making it allocate more.
                let log = if mode == access_mode::KSM {
                    24
                } else {
                    self.caps.general("log_max_klm_list_size").min(24)
                };
                let cap = 1u64 << log;
                let size = u64::from(c.translations_octword_size());
                let n = u64::from(inp.translations_octword_actual_size());
                if size.max(n) > cap {
                    fail!(
                        BAD_PARAM,
                        "CREATE_MKEY indirect list longer than the card takes",
                        "{} entries, at most {cap}",
                        size.max(n)
                    );
                }
                let mut entries = Vec::with_capacity(n as usize);
                for i in 0..n as usize {
                    let Some(b) = CreateMkeyIn::klm(input, i) else {
                        fail!(
                            BAD_INP_LEN,
                            "CREATE_MKEY shorter than its indirect entries",
                            "{n} needed"
                        );
                    };
                    entries.push(IndirectEntry::from_bytes(b));
                }
                if mode == access_mode::KLMS {
                    MkeyMap::Klm { entries }
                } else {
                    let page_shift = c.log_page_size();
                    if !(12..=30).contains(&page_shift) {
                        fail!(
                            BAD_PARAM,
                            "CREATE_MKEY KSM entity size out of range",
                            "log_page_size {page_shift}"
                        );
                    }
                    MkeyMap::Ksm {
                        page_shift: page_shift as u8,
                        entries,
                    }
                }
            }
            m => fail!(
                BAD_PARAM,
                "CREATE_MKEY access mode not supported",
                "access mode {m}"
            ),
        };
        let xlt_octowords = u64::from(c.translations_octword_size())
            .max(inp.translations_octword_actual_size().into());
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
                free,
                umr_en: c.umr_en() != 0,
                remote_inval: c.en_rinval() != 0,
                qpn: MKEY_QPN_NONE,
                xlt_octowords,
            },
        );
        cmd_out::<cmds::CreateMkey>(out)?.set_mkey_index(idx);
        Ok(())
    }

    /// The mkey an lkey/rkey names, if live (not free) and of the same variant.
    pub fn mkey(&self, key: u32) -> Option<&Mkey> {
        self.nic
            .mkeys
            .get(&mkey_index(key))
            .filter(|m| m.key == key && !m.free)
    }

    /// The mkey `lkey` names, if a queue of protection domain `pd` may access it for the
    /// device to write (`write`) or read.
    pub(super) fn top_key(&self, lkey: u32, pd: u32, write: bool) -> Result<&Mkey, XlateError> {
        let m = self.mkey(lkey).ok_or(XlateError::BadKey)?;
        let allowed = if write {
            m.access.local_write
        } else {
            m.access.local_read
        };
        if m.pd != pd || !allowed {
            return Err(XlateError::Protection);
        }
        Ok(m)
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
        // The first and the last byte of the piece are in guest memory.
        let mapped = |pa: u64, n: u32| mem.ends_mapped(pa, u64::from(n));
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
        let m = self.top_key(lkey, pd, write)?;
        self.translate_from(mem, m, addr, len, write)
    }

    /// Translates `len` bytes at `va` through the R_Key mkey `m` (live, in the responder QP's
    /// PD, its remote right for the access checked by the caller) for the device to write
    /// (`write`) or read: the guest physical pieces. The R_Key's own local rights do not
    /// count — a memory window's mkey carries only the remote rights its bind gave (mlx5_ib
    /// creates it with local read, libmlx5's bind adds none) — while the mkeys an indirect
    /// one names need the local right of the access, as for a local key (a window over an MR
    /// without local write serves no remote write).
    pub fn translate_remote(
        &self,
        mem: &crate::guest_mem::GuestMem,
        m: &Mkey,
        va: u64,
        len: u32,
        write: bool,
    ) -> Result<Vec<(u64, u32)>, XlateError> {
        self.translate_from(mem, m, va, len, write)
    }

    /// The guest pieces of `len` bytes at `addr` of mkey `m`, each checked to be in guest
    /// memory.
    fn translate_from(
        &self,
        mem: &crate::guest_mem::GuestMem,
        m: &Mkey,
        addr: u64,
        len: u32,
        write: bool,
    ) -> Result<Vec<(u64, u32)>, XlateError> {
        let mut pieces = Vec::new();
        let mut walk = super::mkey_map::Walk::new(self);
        self.map_range(m, addr, len, write, &mut walk, &mut pieces)?;
        if pieces
            .iter()
            .all(|&(pa, n)| mem.ends_mapped(pa, u64::from(n)))
        {
            Ok(pieces)
        } else {
            Err(XlateError::NotMapped)
        }
    }
}
