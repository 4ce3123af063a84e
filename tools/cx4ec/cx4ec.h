/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libcx4ec: Reed-Solomon erasure coding on the ConnectX-4 vector-calc engine, from user space,
 * through unmodified rdma-core (libibverbs + libmlx5, >= 36: mlx5dv_wr_raw_wqe).
 *
 * The API follows ISA-L's erasure_code.h: a matrix is turned into "tables" once
 * (cx4ec_init_tables, like ec_init_tables), then cx4ec_encode_data (like ec_encode_data)
 * computes m code blocks from k data blocks, one calculation on the card per call.
 * cx4ec_decode_data recovers up to m erased blocks (the decoding matrix is inverted on the
 * host, then one calculation on the card).
 *
 * Each calculation is a SEND with opmod 0xff carrying the vector-calc segment, posted as a
 * raw WQE on an RC QP connected to itself; the card sends the result (the outputs,
 * interleaved per 64-byte chunk) back to the same QP, into a posted receive. Inputs and
 * outputs go through one plain memory region the library owns (no DEVX, so no indirect or
 * interleaved mkeys): data blocks are copied into it unless they already live there
 * (cx4ec_block), and the result is de-interleaved from it on the CPU. Documentation/ec.md
 * ("The user path") explains the choice and its cost.
 *
 * Every function returning int returns 0 on success or a negative errno; the reason, in
 * words, is cx4ec_error(). A context is not thread-safe.
 */
#ifndef CX4EC_H
#define CX4EC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* max_vec_count of ConnectX-4 (and the model's profiles); libmlx5 also caps k at 16 for w != 8. */
#define CX4EC_MAX_K 16
/* The engine's four output slots. */
#define CX4EC_MAX_M 4
/* The interleaving chunk (log_chunk_size 0, the only size libmlx5 uses): blocks are multiples. */
#define CX4EC_CHUNK 64
/* The largest block: the model computes a calculation whole, up to 16 MiB per vector. */
#define CX4EC_MAX_BLOCK (16u << 20)

struct cx4ec;

/* A matrix in the engine's layout, ready for cx4ec_encode_data. */
struct cx4ec_tables {
	int k, m, w;
	/* The outputs the card computes: m, except 4 for m = 3 (the fourth goes nowhere). */
	int n;
	/* k rows x n columns, row-major: entry [i][j] = coefficient of data block i in code
	 * block j; for w != 8 the coefficient is the low nibble and bit 4 is set (libmlx5's
	 * format), the padding column is 0. */
	unsigned char matrix[CX4EC_MAX_K * CX4EC_MAX_M];
};

struct cx4ec_stats {
	uint64_t calcs;        /* calculations completed by the card */
	uint64_t errors;       /* calculations that ended in an error completion or a time-out */
	uint64_t qp_resets;    /* QPs re-created after an error */
	uint64_t bytes_in;     /* input bytes the card read */
	uint64_t bytes_out;    /* result bytes the card sent */
	uint64_t copied_in;    /* input bytes copied into the registered buffer */
};

/*
 * Opens the RDMA device `dev` (NULL: the first one), port 1, and builds the PD, the
 * registered buffer (room for CX4EC_MAX_K inputs and 4 outputs of `max_block` bytes), a CQ
 * and the self-connected RC QP over the RoCE GID `gid_index` (-1: the first RoCE v2 GID of
 * an IPv4 address, else the first RoCE v2 GID, else index 0). On failure returns NULL and
 * writes the reason into err (errlen bytes; err may be NULL).
 */
struct cx4ec *cx4ec_open(const char *dev, int gid_index, size_t max_block, char *err,
			 size_t errlen);
void cx4ec_close(struct cx4ec *ec);
/* The reason the last call failed. */
const char *cx4ec_error(const struct cx4ec *ec);
/* Device name, GID index and QPN in use: "mlx5_0 gid 3 qpn 0x123". */
const char *cx4ec_describe(const struct cx4ec *ec);
void cx4ec_get_stats(const struct cx4ec *ec, struct cx4ec_stats *st);

/*
 * The registered buffer of input block i (0 <= i < CX4EC_MAX_K) for blocks of `len` bytes:
 * data placed there is not copied by cx4ec_encode_data (pass these pointers as data[i]).
 */
unsigned char *cx4ec_block(struct cx4ec *ec, int i, size_t len);

/*
 * Tables from an m x k coding matrix: rows[j * k + i] is the coefficient of data block i in
 * code block j (ISA-L's &a[k * k] of a (k+m) x k generator with the identity on top, or
 * Jerasure's coding matrix). w: 8 (GF(2^8), polynomial 0x11d) or 1, 2, 4 (GF(2^4),
 * polynomial 0x13, each byte two symbols; coefficients below 2^w). 1 <= k <= 16, 1 <= m <= 4.
 * Needs no device; err as in cx4ec_open (may be NULL).
 */
int cx4ec_init_tables(int k, int m, int w, const unsigned char *rows, struct cx4ec_tables *t,
		      char *err, size_t errlen);

/*
 * code[j] = sum over i of coefficient(i, j) * data[i] in the tables' field, for blocks of
 * `len` bytes (a positive multiple of 64, at most the max_block of cx4ec_open). One
 * calculation on the card. On an error completion the QP is re-created, so the context
 * stays usable.
 */
int cx4ec_encode_data(struct cx4ec *ec, size_t len, const struct cx4ec_tables *t,
		      unsigned char **data, unsigned char **code);

/*
 * Recovers the erased blocks of a k + m code: blocks[0..k-1] data, blocks[k..k+m-1] code
 * (generated with `rows` as in cx4ec_init_tables). erasures: nerrs distinct indices
 * (1 <= nerrs <= m); those blocks are rewritten, the others are read. The first k surviving
 * blocks in index order are the inputs; the decoding matrix is computed on the host
 * (inverse of their generator rows), the erased blocks in one calculation on the card.
 */
int cx4ec_decode_data(struct cx4ec *ec, size_t len, int k, int m, int w,
		      const unsigned char *rows, const int *erasures, int nerrs,
		      unsigned char **blocks);

/*
 * Whether the device computes w = 8 (8-bit matrices, GF(2^8)): a one-chunk test
 * calculation whose result is checked. Without DEVX the capability page is out of reach
 * from user space, so this asks the engine itself: 1 yes, 0 no (the card refused it: a
 * ConnectX-4), negative on other errors. The QP is re-created after a refusal.
 */
int cx4ec_probe_w8(struct cx4ec *ec);

/* Host-side GF helpers (w = 4: 0x13, w = 8: 0x11d). */
unsigned char cx4ec_gf_mul(int w, unsigned char a, unsigned char b);
/*
 * A Cauchy coding matrix, as ISA-L's gf_gen_cauchy1_matrix rows k..k+m-1:
 * rows[j * k + i] = 1 / ((k + j) xor i). Every square submatrix of [I; C] is invertible
 * (MDS) when k + m <= 2^w. Returns -EINVAL if k + m > 2^w (16 for w = 4).
 */
int cx4ec_gen_cauchy_matrix(int k, int m, int w, unsigned char *rows);
/* Inverts the n x n matrix `in` into `out` over GF(2^w); -EDOM if singular. */
int cx4ec_gf_invert(int w, int n, const unsigned char *in, unsigned char *out);

#ifdef __cplusplus
}
#endif
#endif
