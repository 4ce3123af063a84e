// SPDX-License-Identifier: GPL-2.0
//! Memory keys: the mkey context, CREATE/DESTROY/QUERY_MKEY (the translation entries follow a
//! CREATE_MKEY input, 8 bytes per page in MTT mode) and QUERY_SPECIAL_CONTEXTS.

use crate::bits::ifc_layouts;

ifc_layouts! {
    /// Memory key context: access mode, rights, PD, range, translation size.
    pub struct Mkc: Ifc "mkc", 0x40 {
        free, set_free: u32 @ 0x001, 0x1;
        access_mode_4_2, set_access_mode_4_2: u32 @ 0x003, 0x3;
        relaxed_ordering_write, set_relaxed_ordering_write: u32 @ 0x00d, 0x1;
        small_fence_on_rdma_read_response, set_small_fence_on_rdma_read_response: u32 @ 0x00f, 0x1;
        umr_en, set_umr_en: u32 @ 0x010, 0x1;
        a, set_a: u32 @ 0x011, 0x1;
        rw, set_rw: u32 @ 0x012, 0x1;
        rr, set_rr: u32 @ 0x013, 0x1;
        lw, set_lw: u32 @ 0x014, 0x1;
        lr, set_lr: u32 @ 0x015, 0x1;
        access_mode_1_0, set_access_mode_1_0: u32 @ 0x016, 0x2;
        ma_translation_mode, set_ma_translation_mode: u32 @ 0x01a, 0x2;
        qpn, set_qpn: u32 @ 0x020, 0x18;
        mkey_7_0, set_mkey_7_0: u32 @ 0x038, 0x8;
        length64, set_length64: u32 @ 0x060, 0x1;
        bsf_en, set_bsf_en: u32 @ 0x061, 0x1;
        sync_umr, set_sync_umr: u32 @ 0x062, 0x1;
        expected_sigerr_count, set_expected_sigerr_count: u32 @ 0x065, 0x1;
        en_rinval, set_en_rinval: u32 @ 0x067, 0x1;
        pd, set_pd: u32 @ 0x068, 0x18;
        start_addr, set_start_addr: u64 @ 0x080, 0x40;
        len, set_len: u64 @ 0x0c0, 0x40;
        bsf_octword_size, set_bsf_octword_size: u32 @ 0x100, 0x20;
        crossing_target_vhca_id, set_crossing_target_vhca_id: u32 @ 0x180, 0x10;
        translations_octword_size, set_translations_octword_size: u32 @ 0x1a0, 0x20;
        relaxed_ordering_read, set_relaxed_ordering_read: u32 @ 0x1d9, 0x1;
        log_page_size, set_log_page_size: u32 @ 0x1da, 0x6;
        pcie_tph_en, set_pcie_tph_en: u32 @ 0x1e5, 0x1;
        pcie_tph_ph, set_pcie_tph_ph: u32 @ 0x1e6, 0x2;
        pcie_tph_steering_tag_index, set_pcie_tph_steering_tag_index: u32 @ 0x1e8, 0x8;
    }

    /// Input of `CREATE_MKEY`.
    pub struct CreateMkeyIn: Ifc "create_mkey_in", 0x110 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        pg_access, set_pg_access: u32 @ 0x060, 0x1;
        mkey_umem_valid, set_mkey_umem_valid: u32 @ 0x061, 0x1;
        data_direct, set_data_direct: u32 @ 0x062, 0x1;
        memory_key_mkey_entry, memory_key_mkey_entry_mut: Mkc @ 0x080, 0x200;
        translations_octword_actual_size, set_translations_octword_actual_size: u32 @ 0x300, 0x20;
        klm_pas_mtt, set_klm_pas_mtt: tail u32 @ 0x880, 0x20;
    }

    /// Output of `CREATE_MKEY`.
    pub struct CreateMkeyOut: Ifc "create_mkey_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        mkey_index, set_mkey_index: u32 @ 0x048, 0x18;
    }

    /// Input of `DESTROY_MKEY`.
    pub struct DestroyMkeyIn: Ifc "destroy_mkey_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        mkey_index, set_mkey_index: u32 @ 0x048, 0x18;
    }

    /// Output of `DESTROY_MKEY`.
    pub struct DestroyMkeyOut: Ifc "destroy_mkey_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `QUERY_MKEY`.
    pub struct QueryMkeyIn: Ifc "query_mkey_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        mkey_index, set_mkey_index: u32 @ 0x048, 0x18;
        pg_access, set_pg_access: u32 @ 0x060, 0x1;
    }

    /// Output of `QUERY_MKEY`.
    pub struct QueryMkeyOut: Ifc "query_mkey_out", 0x130 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        memory_key_mkey_entry, memory_key_mkey_entry_mut: Mkc @ 0x080, 0x200;
        bsf0_klm0_pas_mtt0_1, bsf0_klm0_pas_mtt0_1_mut: bytes @ 0x880, 0x80;
        bsf1_klm1_pas_mtt2_3, bsf1_klm1_pas_mtt2_3_mut: bytes @ 0x900, 0x80;
    }

    /// Input of `QUERY_SPECIAL_CONTEXTS`.
    pub struct QuerySpecialContextsIn: Ifc "query_special_contexts_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
    }

    /// Output of `QUERY_SPECIAL_CONTEXTS`.
    pub struct QuerySpecialContextsOut: Ifc "query_special_contexts_out", 0x20 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        dump_fill_mkey, set_dump_fill_mkey: u32 @ 0x040, 0x20;
        resd_lkey, set_resd_lkey: u32 @ 0x060, 0x20;
        null_mkey, set_null_mkey: u32 @ 0x080, 0x20;
        terminate_scatter_list_mkey, set_terminate_scatter_list_mkey: u32 @ 0x0a0, 0x20;
        repeated_mkey, set_repeated_mkey: u32 @ 0x0c0, 0x20;
    }

    /// Input of `PAGE_FAULT_RESUME`: the driver resolved (or failed to resolve, `error`) the
    /// page fault an EQE reported; the queue it held continues.
    pub struct PageFaultResumeIn: Ifc "page_fault_resume_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        page_fault_info, page_fault_info_mut: TransPageFaultInfo @ 0x040, 0x40;
    }

    /// Output of `PAGE_FAULT_RESUME`.
    pub struct PageFaultResumeOut: Ifc "page_fault_resume_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// A transport-scheme fault being resumed (`mlx5_ifc_trans_page_fault_info_bits`): the
    /// EQE's fault type and queue (a WQE fault's WQ number, an RDMA fault's token = QP
    /// number), `error` if the driver could not resolve it.
    pub struct TransPageFaultInfo: Ifc "trans_page_fault_info", 0x8 {
        error, set_error: u32 @ 0x000, 0x1;
        page_fault_type, set_page_fault_type: u32 @ 0x005, 0x3;
        wq_number, set_wq_number: u32 @ 0x008, 0x18;
        fault_token, set_fault_token: u32 @ 0x028, 0x18;
    }
}

/// `mkc.access_mode_1_0` (with `access_mode_4_2` above it).
pub mod access_mode {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_MKC_ACCESS_MODE_", access_mode_name;
        PA = 0x0, "PA";
        MTT = 0x1, "MTT";
        KLMS = 0x2, "KLMS";
        KSM = 0x3, "KSM";
    }
}

/// The lkey mlx5e writes into unused receive scatter entries when the device has no
/// terminate-scatter-list mkey (`MLX5_TERMINATE_SCATTER_LIST_LKEY`, qp.h).
pub const TERMINATE_SCATTER_LIST_LKEY: u32 = 0x100;

/// An mkey as software uses it: `index << 8 | variant` (`mlx5_idx_to_mkey`).
pub const fn mkey_from_index(index: u32, variant: u8) -> u32 {
    (index << 8) | variant as u32
}

/// The index part of an lkey/rkey.
pub const fn mkey_index(mkey: u32) -> u32 {
    mkey >> 8
}

impl Mkc {
    /// The full access mode (`access_mode_4_2 << 2 | access_mode_1_0`).
    pub fn access_mode(&self) -> u32 {
        self.access_mode_4_2() << 2 | self.access_mode_1_0()
    }
}

impl CreateMkeyIn {
    /// Translation entry `i` (a 64-bit page address in MTT mode) after the fixed part of a
    /// whole CREATE_MKEY message.
    pub fn mtt(msg: &[u8], i: usize) -> Option<u64> {
        let r = crate::bits::tail_range(msg.len(), Self::SIZE, 8, i)?;
        Some(crate::bits::get64(&msg[r], 0, 64))
    }

    /// Indirect translation entry `i` (16 bytes: a `struct mlx5_klm` in KLMS mode, a
    /// `struct mlx5_ksm` in KSM mode) after the fixed part of a whole CREATE_MKEY message.
    pub fn klm(msg: &[u8], i: usize) -> Option<&[u8]> {
        let r = crate::bits::tail_range(msg.len(), Self::SIZE, 16, i)?;
        Some(&msg[r])
    }

    /// Writes translation entry `i` of a whole CREATE_MKEY message.
    pub fn set_mtt(msg: &mut [u8], i: usize, pa: u64) -> Result<(), crate::bits::OutOfBounds> {
        let r =
            crate::bits::tail_range(msg.len(), Self::SIZE, 8, i).ok_or(crate::bits::OutOfBounds)?;
        crate::bits::set64(&mut msg[r], 0, 64, pa);
        Ok(())
    }
}

impl Mkc {
    /// Whether the key covers no bytes (`len` 0 without `length64`), which no access can use.
    pub fn is_empty(&self) -> bool {
        self.len() == 0 && self.length64() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // create_mkey_in: mkc at bit 0x80 (byte 0x10) with access_mode_1_0 at +0x16, lr at +0x15,
    // pd at +0x68, start_addr at +0x80, len at +0xc0, log_page_size at +0x1da; MTTs at 0x110.
    #[test]
    fn create_mkey_places_context_and_mtts() {
        let mut msg = [0u8; CreateMkeyIn::SIZE + 16];
        {
            let (i, _) =
                <CreateMkeyIn as zerocopy::FromBytes>::mut_from_prefix(&mut msg[..]).unwrap();
            let c = i.memory_key_mkey_entry_mut();
            c.set_access_mode_1_0(access_mode::MTT.into());
            c.set_lr(1);
            c.set_pd(0x123);
            c.set_start_addr(0x7000);
            c.set_len(0x2000);
            c.set_log_page_size(12);
            c.set_mkey_7_0(0x5a);
        }
        CreateMkeyIn::set_mtt(&mut msg, 1, 0x1234_5000).unwrap();
        assert_eq!(msg[0x12], 0x04 | 0x01);
        assert_eq!(&msg[0x1c..0x20], &[0, 0, 0x01, 0x23]);
        assert_eq!(msg[0x17], 0x5a);
        assert_eq!(&msg[0x20..0x28], &[0, 0, 0, 0, 0, 0, 0x70, 0]);
        assert_eq!(msg[0x4b] & 0x3f, 12);
        assert_eq!(CreateMkeyIn::mtt(&msg, 1), Some(0x1234_5000));
        assert_eq!(CreateMkeyIn::mtt(&msg, 2), None);
        // The same tail as one 16-byte indirect entry (KLM/KSM).
        assert_eq!(
            &CreateMkeyIn::klm(&msg, 0).unwrap()[8..],
            &[0, 0, 0, 0, 0x12, 0x34, 0x50, 0]
        );
        assert_eq!(CreateMkeyIn::klm(&msg, 1), None);
        assert_eq!(mkey_from_index(3, 0x5a), 0x35a);
        assert_eq!(mkey_index(0x35a), 3);
    }
}
