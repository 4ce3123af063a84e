// SPDX-License-Identifier: GPL-2.0
/*
 * The device side of libcx4ec: the verbs objects, the self-connected RC QP and one
 * vector-calc calculation on it.
 *
 * Everything goes through unmodified rdma-core: the QP is created by mlx5dv_create_qp with
 * MLX5DV_QP_EX_WITH_RAW_WQE, and the vector-calc WQE (a SEND with opmod 0xff, which no verb
 * builds) is handed to mlx5dv_wr_raw_wqe, which copies it into the send queue as it is,
 * rewriting only the WQE index, and rings the doorbell at ibv_wr_complete. The QP is
 * connected to itself (destination QPN = its own, destination GID = its own RoCE GID), as
 * MLNX_OFED's libmlx5 does, so the card sends the result back into the receive posted just
 * before. Unlike libmlx5 we signal the SEND: its completion returns the send-queue slot to
 * libmlx5's accounting (an unsignaled WQE would only be retired by a later signaled one).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <endian.h>

#include "internal.h"

/* The vector-calc WQE (libmlx5 wqe.h `mlx5_vec_calc_seg`; include/hw/wqe/vector_calc.rs). */
#define OPCODE_SEND 0x0a
#define OPMOD_VEC_CALC 0xff
#define VEC_CALC_DS 4
#define CALC_OP_XOR 0x05
#define CALC_MATRIX 0x80
#define CALC_MATRIX_8BIT 0x10
#define CTRL_CQ_UPDATE 0x08

struct vec_calc_wqe {
	/* control segment */
	uint32_t opmod_idx_opcode;
	uint32_t qpn_ds;
	uint8_t signature;
	uint8_t rsvd0[2];
	uint8_t fm_ce_se;
	uint32_t imm;
	/* vector-calc segment */
	uint8_t calc_op[4];
	uint32_t rsvd1[2];
	uint8_t op_tags;
	uint8_t mat_le_tag_cs;
	uint8_t rsvd2;
	uint8_t vec_count;
	uint32_t rsvd3;
	uint32_t cm_lkey;
	uint64_t cm_addr;
	uint32_t vec_size;
	uint32_t vec_lkey;
	uint64_t vec_addr;
} __attribute__((packed));

_Static_assert(sizeof(struct vec_calc_wqe) == 16 * VEC_CALC_DS, "one 64-byte basic block");

int cx4ec_fail(struct cx4ec *ec, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ec->err, sizeof(ec->err), fmt, ap);
	va_end(ap);
	return err;
}

const char *cx4ec_error(const struct cx4ec *ec)
{
	return ec->err;
}

const char *cx4ec_describe(const struct cx4ec *ec)
{
	return ec->desc;
}

void cx4ec_get_stats(const struct cx4ec *ec, struct cx4ec_stats *st)
{
	*st = ec->stats;
}

static void destroy_qp(struct cx4ec *ec)
{
	if (ec->qp)
		ibv_destroy_qp(ec->qp);
	if (ec->cq)
		ibv_destroy_cq(ec->cq);
	ec->qp = NULL;
	ec->cq = NULL;
}

/* A CQ and the RC QP, created and walked to RTS connected to itself. */
static int create_qp(struct cx4ec *ec)
{
	struct ibv_qp_init_attr_ex ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_SEND,
	};
	struct mlx5dv_qp_init_attr dv = {
		.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS,
		.send_ops_flags = MLX5DV_QP_EX_WITH_RAW_WQE,
	};
	struct ibv_qp_attr a;
	int r;

	ec->cq = ibv_create_cq(ec->ctx, 64, NULL, NULL, 0);
	if (!ec->cq)
		return cx4ec_fail(ec, -errno, "ibv_create_cq: %s", strerror(errno));
	ia.pd = ec->pd;
	ia.send_cq = ec->cq;
	ia.recv_cq = ec->cq;
	ec->qp = mlx5dv_create_qp(ec->ctx, &ia, &dv);
	if (!ec->qp) {
		r = -errno;
		destroy_qp(ec);
		return cx4ec_fail(ec, r, "mlx5dv_create_qp (RC, raw WQE): %s", strerror(-r));
	}
	ec->qpx = ibv_qp_to_qp_ex(ec->qp);
	ec->dv = mlx5dv_qp_ex_from_ibv_qp_ex(ec->qpx);
	if (!ec->qpx || !ec->dv) {
		destroy_qp(ec);
		return cx4ec_fail(ec, -EOPNOTSUPP, "libmlx5 gave no extended QP (raw WQE) interface");
	}

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = 0;
	r = ibv_modify_qp(ec->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS);
	if (r)
		goto bad;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = ec->mtu;
	a.dest_qp_num = ec->qp->qp_num;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = ec->gid;
	a.ah_attr.grh.sgid_index = (uint8_t)ec->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	r = ibv_modify_qp(ec->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			  IBV_QP_MIN_RNR_TIMER);
	if (r)
		goto bad;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 1;
	r = ibv_modify_qp(ec->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	if (r)
		goto bad;
	snprintf(ec->desc, sizeof(ec->desc), "%s gid %d qpn %#x",
		 ibv_get_device_name(ec->ctx->device), ec->gid_index, ec->qp->qp_num);
	return 0;
bad:
	destroy_qp(ec);
	return cx4ec_fail(ec, -r, "connecting the QP to itself (INIT/RTR/RTS): %s", strerror(r));
}

/* The GID to loop back over: the given index, or the first RoCE v2 GID of an IPv4 address,
 * else the first RoCE v2 GID, else index 0. */
static int pick_gid(struct cx4ec *ec, int want, int table_len)
{
	struct ibv_gid_entry e;
	int i, v2 = -1, v4 = -1;

	if (want >= 0) {
		if (ibv_query_gid(ec->ctx, 1, want, &ec->gid))
			return cx4ec_fail(ec, -EINVAL, "GID index %d: %s", want, strerror(errno));
		ec->gid_index = want;
		return 0;
	}
	for (i = 0; i < table_len; i++) {
		if (ibv_query_gid_ex(ec->ctx, 1, i, &e, 0))
			continue;
		if (e.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		if (v2 < 0)
			v2 = i;
		/* ::ffff:a.b.c.d */
		if (v4 < 0 && !memcmp(e.gid.raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12))
			v4 = i;
	}
	ec->gid_index = v4 >= 0 ? v4 : v2 >= 0 ? v2 : 0;
	if (ibv_query_gid(ec->ctx, 1, ec->gid_index, &ec->gid))
		return cx4ec_fail(ec, -EINVAL, "GID index %d: %s", ec->gid_index, strerror(errno));
	return 0;
}

struct cx4ec *cx4ec_open(const char *dev, int gid_index, size_t max_block, char *err,
			 size_t errlen)
{
	struct ibv_device **list;
	struct ibv_port_attr pa;
	struct cx4ec *ec;
	const char *t;
	int n, i, r;

	ec = calloc(1, sizeof(*ec));
	if (!ec) {
		if (err && errlen)
			snprintf(err, errlen, "out of memory");
		return NULL;
	}
	t = getenv("CX4EC_TIMEOUT_MS");
	ec->timeout_ms = t ? atoi(t) : 120000;
	if (!max_block || max_block % CX4EC_CHUNK || max_block > CX4EC_MAX_BLOCK) {
		cx4ec_fail(ec, -EINVAL, "block size %zu: must be a positive multiple of %d, at most %u",
			   max_block, CX4EC_CHUNK, CX4EC_MAX_BLOCK);
		goto fail;
	}
	ec->max_block = max_block;

	list = ibv_get_device_list(&n);
	if (!list || !n) {
		cx4ec_fail(ec, -ENODEV, "no RDMA device%s", list ? "" : " (ibv_get_device_list failed)");
		if (list)
			ibv_free_device_list(list);
		goto fail;
	}
	for (i = 0; i < n; i++)
		if (!dev || !strcmp(ibv_get_device_name(list[i]), dev))
			break;
	if (i == n) {
		cx4ec_fail(ec, -ENODEV, "no RDMA device named %s", dev);
		ibv_free_device_list(list);
		goto fail;
	}
	if (!mlx5dv_is_supported(list[i])) {
		cx4ec_fail(ec, -EOPNOTSUPP, "%s is not an mlx5 device (libmlx5)",
			   ibv_get_device_name(list[i]));
		ibv_free_device_list(list);
		goto fail;
	}
	ec->ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!ec->ctx) {
		cx4ec_fail(ec, -errno, "ibv_open_device: %s", strerror(errno));
		goto fail;
	}
	if (ibv_query_port(ec->ctx, 1, &pa)) {
		cx4ec_fail(ec, -errno, "ibv_query_port: %s", strerror(errno));
		goto fail;
	}
	if (pa.state != IBV_PORT_ACTIVE) {
		cx4ec_fail(ec, -ENETDOWN, "port 1 is not active (state %d)", pa.state);
		goto fail;
	}
	/* libmlx5's EC path uses MTU 1024; the result is segmented at it either way. */
	ec->mtu = pa.active_mtu < IBV_MTU_1024 ? pa.active_mtu : IBV_MTU_1024;
	if (pick_gid(ec, gid_index, pa.gid_tbl_len) < 0)
		goto fail;

	ec->pd = ibv_alloc_pd(ec->ctx);
	if (!ec->pd) {
		cx4ec_fail(ec, -errno, "ibv_alloc_pd: %s", strerror(errno));
		goto fail;
	}
	ec->buf_len = (CX4EC_MAX_K + CX4EC_MAX_M) * max_block + CX4EC_CHUNK;
	if (posix_memalign((void **)&ec->buf, 4096, ec->buf_len)) {
		cx4ec_fail(ec, -ENOMEM, "cannot allocate %zu bytes", ec->buf_len);
		goto fail;
	}
	memset(ec->buf, 0, ec->buf_len);
	ec->in = ec->buf;
	ec->out = ec->in + CX4EC_MAX_K * max_block;
	ec->mat = ec->out + CX4EC_MAX_M * max_block;
	ec->mr = ibv_reg_mr(ec->pd, ec->buf, ec->buf_len, IBV_ACCESS_LOCAL_WRITE);
	if (!ec->mr) {
		cx4ec_fail(ec, -errno, "ibv_reg_mr (%zu bytes): %s", ec->buf_len, strerror(errno));
		goto fail;
	}
	r = create_qp(ec);
	if (r < 0)
		goto fail;
	return ec;
fail:
	if (err && errlen)
		snprintf(err, errlen, "%s", ec->err);
	cx4ec_close(ec);
	return NULL;
}

void cx4ec_close(struct cx4ec *ec)
{
	if (!ec)
		return;
	destroy_qp(ec);
	if (ec->mr)
		ibv_dereg_mr(ec->mr);
	if (ec->pd)
		ibv_dealloc_pd(ec->pd);
	if (ec->ctx)
		ibv_close_device(ec->ctx);
	free(ec->buf);
	free(ec);
}

unsigned char *cx4ec_block(struct cx4ec *ec, int i, size_t len)
{
	if (i < 0 || i >= CX4EC_MAX_K || len > ec->max_block)
		return NULL;
	return ec->in + (size_t)i * len;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* After an error the QP is in the error state (the card flushes its receive): start over
 * with a fresh CQ and QP so that the context stays usable. */
static int reset_qp(struct cx4ec *ec, int err)
{
	char why[sizeof(ec->err)];

	memcpy(why, ec->err, sizeof(why));
	destroy_qp(ec);
	ec->stats.errors++;
	ec->stats.qp_resets++;
	if (create_qp(ec) < 0)
		return cx4ec_fail(ec, err, "%s; re-creating the QP failed too", why);
	memcpy(ec->err, why, sizeof(why));
	return err;
}

int cx4ec_calc(struct cx4ec *ec, int k, int used, int w8, size_t len)
{
	int n = used == 3 ? 4 : used, i, r, got_send = 0, got_recv = 0, idle = 0;
	uint64_t id = ++ec->seq * 2;
	struct ibv_sge sge = {
		.addr = (uintptr_t)ec->out,
		.length = (uint32_t)(n * len),
		.lkey = ec->mr->lkey,
	};
	struct ibv_recv_wr rwr = { .wr_id = id + 1, .sg_list = &sge, .num_sge = 1 }, *bad;
	struct vec_calc_wqe w;
	long deadline;

	memset(&w, 0, sizeof(w));
	w.opmod_idx_opcode = htobe32((uint32_t)OPMOD_VEC_CALC << 24 | OPCODE_SEND);
	w.qpn_ds = htobe32(ec->qp->qp_num << 8 | VEC_CALC_DS);
	w.fm_ce_se = CTRL_CQ_UPDATE;
	for (i = 0; i < used; i++)
		w.calc_op[i] = CALC_OP_XOR;
	w.mat_le_tag_cs = CALC_MATRIX | (w8 ? CALC_MATRIX_8BIT : 0);
	w.vec_count = (uint8_t)k;
	w.cm_lkey = htobe32(ec->mr->lkey);
	w.cm_addr = htobe64((uintptr_t)ec->mat);
	w.vec_size = htobe32((uint32_t)len);
	w.vec_lkey = htobe32(ec->mr->lkey);
	w.vec_addr = htobe64((uintptr_t)ec->in);

	r = ibv_post_recv(ec->qp, &rwr, &bad);
	if (r)
		return reset_qp(ec, cx4ec_fail(ec, -r, "ibv_post_recv: %s", strerror(r)));
	ibv_wr_start(ec->qpx);
	ec->qpx->wr_id = id; /* raw WQE: the ctrl segment's fm_ce_se signals, not wr_flags */
	mlx5dv_wr_raw_wqe(ec->dv, &w);
	r = ibv_wr_complete(ec->qpx);
	if (r)
		return reset_qp(ec, cx4ec_fail(ec, -r, "posting the vector-calc WQE: %s", strerror(r)));

	deadline = now_ms() + ec->timeout_ms;
	while (!got_send || !got_recv) {
		struct ibv_wc wc[4];

		r = ibv_poll_cq(ec->cq, 4, wc);
		if (r < 0)
			return reset_qp(ec, cx4ec_fail(ec, -EIO, "ibv_poll_cq failed"));
		for (i = 0; i < r; i++) {
			const char *what = wc[i].wr_id == id ? "vector-calc SEND" : "result receive";

			if (wc[i].wr_id != id && wc[i].wr_id != id + 1)
				continue; /* a leftover of an earlier calculation: cannot happen */
			if (wc[i].status != IBV_WC_SUCCESS)
				return reset_qp(ec, cx4ec_fail(ec, -EIO,
					"the card refused the calculation: %s completion %s (vendor syndrome %#x)",
					what, ibv_wc_status_str(wc[i].status), wc[i].vendor_err));
			if (wc[i].wr_id == id) {
				got_send = 1;
			} else {
				if (wc[i].byte_len != (uint32_t)(n * len))
					return reset_qp(ec, cx4ec_fail(ec, -EIO,
						"result of %u bytes, expected %zu", wc[i].byte_len,
						n * len));
				got_recv = 1;
			}
		}
		if (r)
			continue;
		if (now_ms() > deadline)
			return reset_qp(ec, cx4ec_fail(ec, -ETIMEDOUT,
				"no completion within %d ms (send %s, receive %s)", ec->timeout_ms,
				got_send ? "done" : "pending", got_recv ? "done" : "pending"));
		if (++idle > 1000)
			usleep(50);
	}
	ec->stats.calcs++;
	ec->stats.bytes_in += (uint64_t)k * len;
	ec->stats.bytes_out += (uint64_t)n * len;
	return 0;
}
