// SPDX-License-Identifier: GPL-2.0
//! Firmware page management: `QUERY_PAGES` and `MANAGE_PAGES`.
//!
//! Page addresses travel in the variable-length `pas[]` array after the fixed part of
//! [`ManagePagesIn`] / [`ManagePagesOut`]; use the associated `pas` / `set_pas` functions on the
//! whole message buffer.

use crate::bits::ifc_layouts;

/// Size of a firmware page (`MLX5_ADAPTER_PAGE_SIZE`, device.h).
pub const PAGE_SIZE: usize = 4096;

ifc_layouts! {
    /// Input of `QUERY_PAGES`; `op_mod` is one of [`query_pages_op_mod`].
    pub struct QueryPagesIn: Ifc "query_pages_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        embedded_cpu_function, set_embedded_cpu_function: u32 @ 0x040, 0x1;
        function_id, set_function_id: u32 @ 0x050, 0x10;
    }

    /// Output of `QUERY_PAGES`; `num_pages` is a two's-complement `s32` (negative: pages to return).
    pub struct QueryPagesOut: Ifc "query_pages_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        embedded_cpu_function, set_embedded_cpu_function: u32 @ 0x040, 0x1;
        function_id, set_function_id: u32 @ 0x050, 0x10;
        num_pages, set_num_pages: u32 @ 0x060, 0x20;
    }

    /// Input of `MANAGE_PAGES`; `op_mod` is one of [`manage_pages_op_mod`], followed by `input_num_entries` page addresses (`pas[]`).
    pub struct ManagePagesIn: Ifc "manage_pages_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        embedded_cpu_function, set_embedded_cpu_function: u32 @ 0x040, 0x1;
        function_id, set_function_id: u32 @ 0x050, 0x10;
        input_num_entries, set_input_num_entries: u32 @ 0x060, 0x20;
        pas, set_pas: tail u64 @ 0x080, 0x40;
    }

    /// Output of `MANAGE_PAGES`; a take returns `output_num_entries` page addresses (`pas[]`).
    pub struct ManagePagesOut: Ifc "manage_pages_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        output_num_entries, set_output_num_entries: u32 @ 0x040, 0x20;
        pas, set_pas: tail u64 @ 0x080, 0x40;
    }
}

/// `op_mod` of [`QueryPagesIn`] (`MLX5_QUERY_PAGES_IN_OP_MOD_*`, mlx5_ifc.h).
pub mod query_pages_op_mod {
    use crate::bits::code_table;

    code_table! { u16, "MLX5_QUERY_PAGES_IN_OP_MOD_", query_pages_op_mod_name;
        /// Pages needed before `INIT_HCA`.
        BOOT = 0x1, "BOOT_PAGES";
        /// Pages needed for `INIT_HCA`.
        INIT = 0x2, "INIT_PAGES";
    }
}

/// `op_mod` of [`ManagePagesIn`] (`MLX5_PAGES_*`, core/pagealloc.c).
pub mod manage_pages_op_mod {
    use crate::bits::code_table;

    code_table! { u16, "MLX5_PAGES_", manage_pages_op_mod_name;
        CANT_GIVE = 0x0, "CANT_GIVE";
        GIVE = 0x1, "GIVE";
        TAKE = 0x2, "TAKE";
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manage_pages_pas_follow_the_fixed_part() {
        let mut msg = [0u8; ManagePagesIn::SIZE + 2 * 8];
        {
            let (hdr, _) = <ManagePagesIn as zerocopy::FromBytes>::mut_from_prefix(&mut msg[..])
                .expect("message holds the header");
            hdr.set_opcode(crate::opcode::MANAGE_PAGES.into());
            hdr.set_op_mod(manage_pages_op_mod::GIVE.into());
            hdr.set_input_num_entries(2);
        }
        ManagePagesIn::set_pas(&mut msg, 0, 0x1_2345_6000).unwrap();
        ManagePagesIn::set_pas(&mut msg, 1, 0x8000).unwrap();
        assert_eq!(
            ManagePagesIn::set_pas(&mut msg, 2, 0),
            Err(crate::bits::OutOfBounds)
        );
        assert_eq!(&msg[0x10..0x18], &[0, 0, 0, 0x01, 0x23, 0x45, 0x60, 0x00]);
        assert_eq!(ManagePagesIn::pas(&msg, 1), Some(0x8000));
        assert_eq!(ManagePagesIn::pas(&msg, 2), None);
        assert_eq!(
            crate::bits::tail_count(msg.len(), ManagePagesIn::SIZE, 8),
            2
        );
        assert_eq!(&msg[..4], &[0x01, 0x08, 0, 0]);
        assert_eq!(&msg[4..8], &[0, 0, 0, 1]);
    }

    // QUERY_PAGES num_pages is an s32 in the driver (pagealloc.c): negative means "return".
    #[test]
    fn query_pages_num_pages_is_twos_complement() {
        let mut o = QueryPagesOut::new();
        o.set_num_pages((-3i32) as u32);
        assert_eq!(&o.0[0xc..0x10], &[0xff, 0xff, 0xff, 0xfd]);
        assert_eq!(o.num_pages() as i32, -3);
    }
}
