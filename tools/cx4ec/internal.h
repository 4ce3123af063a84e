/* SPDX-License-Identifier: GPL-2.0 */
/* libcx4ec internals: the context and the one-calculation primitive (qp.c). */
#ifndef CX4EC_INTERNAL_H
#define CX4EC_INTERNAL_H

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include "cx4ec.h"

struct cx4ec {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;
	struct mlx5dv_qp_ex *dv;
	struct ibv_mr *mr;
	union ibv_gid gid;
	int gid_index;
	enum ibv_mtu mtu;
	size_t max_block;
	/* One registered allocation: inputs (CX4EC_MAX_K x max_block), then the result stream
	 * (CX4EC_MAX_M x max_block), then the matrix (one chunk). */
	unsigned char *buf;
	size_t buf_len;
	unsigned char *in, *out, *mat;
	uint64_t seq;
	int timeout_ms;
	struct cx4ec_stats stats;
	char err[256];
	char desc[96];
};

/* The field a width computes in: GF(2^8) for 8, GF(2^4) for 1, 2 and 4. */
static inline int gf_width(int w)
{
	return w == 8 ? 8 : 4;
}

int cx4ec_fail(struct cx4ec *ec, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * One calculation: the k inputs of `len` bytes at ec->in, the k x n matrix at ec->mat
 * (n = 1, 2 or 4; `used` output slots, 3 for n = 4 with a padding column), 8-bit or not.
 * On success the result stream (n x len bytes, interleaved per chunk) is at ec->out.
 */
int cx4ec_calc(struct cx4ec *ec, int k, int used, int w8, size_t len);

#endif
