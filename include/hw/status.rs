// SPDX-License-Identifier: GPL-2.0
//! Command completion status codes (`MLX5_CMD_STAT_*`, device.h), found in the `status` byte
//! of every command output ([`crate::cmd::MboxOut`]).

use crate::bits::code_table;

code_table! { u8, "MLX5_CMD_STAT_", status_name;
    OK = 0x0, "OK";
    INT_ERR = 0x1, "INT_ERR";
    BAD_OP = 0x2, "BAD_OP_ERR";
    BAD_PARAM = 0x3, "BAD_PARAM_ERR";
    BAD_SYS_STATE = 0x4, "BAD_SYS_STATE_ERR";
    BAD_RES = 0x5, "BAD_RES_ERR";
    RES_BUSY = 0x6, "RES_BUSY";
    NOT_READY = 0x7, "NOT_READY";
    LIM = 0x8, "LIM_ERR";
    BAD_RES_STATE = 0x9, "BAD_RES_STATE_ERR";
    IX = 0xa, "IX_ERR";
    NO_RES = 0xf, "NO_RES_ERR";
    BAD_QP_STATE = 0x10, "BAD_QP_STATE_ERR";
    BAD_PKT = 0x30, "BAD_PKT_ERR";
    BAD_SIZE_OUTS_CQES = 0x40, "BAD_SIZE_OUTS_CQES_ERR";
    BAD_INP_LEN = 0x50, "BAD_INP_LEN_ERR";
    BAD_OUTP_LEN = 0x51, "BAD_OUTP_LEN_ERR";
}

#[cfg(test)]
mod tests {
    use super::*;

    // The values of the brief and device.h's enum, written out independently.
    #[test]
    fn status_codes_have_their_published_values() {
        let expect: [(u8, u8); 16] = [
            (OK, 0),
            (INT_ERR, 1),
            (BAD_OP, 2),
            (BAD_PARAM, 3),
            (BAD_SYS_STATE, 4),
            (BAD_RES, 5),
            (RES_BUSY, 6),
            (LIM, 8),
            (BAD_RES_STATE, 9),
            (IX, 0xa),
            (NO_RES, 0xf),
            (BAD_INP_LEN, 0x50),
            (BAD_OUTP_LEN, 0x51),
            (BAD_QP_STATE, 0x10),
            (BAD_PKT, 0x30),
            (BAD_SIZE_OUTS_CQES, 0x40),
        ];
        for (ours, published) in expect {
            assert_eq!(ours, published, "{}", status_name(ours));
        }
        assert_eq!(status_name(0x50), "BAD_INP_LEN_ERR");
        assert_eq!(status_name(0xee), "UNKNOWN");
    }
}
