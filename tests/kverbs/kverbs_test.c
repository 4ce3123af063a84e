// SPDX-License-Identifier: GPL-2.0
/*
 * kverbs_test: a kernel verbs user for the cx4 VM tests (tests/ib.py). Not part of the
 * driver: a small ib_client that, for the RDMA device named by `dev`, runs what kernel ULPs
 * do over a pair of RC QPs of that device connected to each other through one of its GIDs
 * (the card loops the packets back): SEND/RECV (+immediate), RDMA WRITE (+immediate), RDMA
 * READ, an atomic the MR's rights refuse (remote access error, the QP in error, the next
 * request flushed), a reset and reconnect, a fast registration (IB_WR_REG_MR) with atomic
 * rights and fetch-and-add / compare-and-swap through it, a local invalidation and a WRITE
 * it refuses, a UD send without an address handle (refused), a completion event on an
 * armed CQ, CQ moderation, and a kernel SRQ receiving inline sends. Each
 * check prints "kverbs: PASS <name>" or "kverbs: FAIL <name>: <why>"; the run ends with
 * "kverbs: <gid type> done: N passed, M failed". It runs once over a RoCE v2 GID (the
 * port's IPv4 address) and once over the RoCE v1 link-local GID.
 */

#include <linux/completion.h>
#include <linux/dma-mapping.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

static char *dev = "cx4_0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "the RDMA device to test");

#define BUF 4096
#define TIMEOUT_MS 5000

struct side {
	struct ib_qp *qp;
	void *buf;
	u64 dma;
};

struct run {
	struct ib_device *ib;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_cq *ev_cq;
	struct completion ev;
	struct side a, b;
	int passed, failed;
};

#define CHECK(r, name, cond, fmt, ...)                                              \
	do {                                                                        \
		if (cond) {                                                         \
			(r)->passed++;                                              \
			pr_info("kverbs: PASS %s\n", name);                         \
		} else {                                                            \
			(r)->failed++;                                              \
			pr_info("kverbs: FAIL %s: " fmt "\n", name, ##__VA_ARGS__); \
		}                                                                   \
	} while (0)

/* Polls `cq` until `n` completions arrived or the time is up; returns how many. */
static int poll_n(struct ib_cq *cq, struct ib_wc *wc, int n)
{
	unsigned long end = jiffies + msecs_to_jiffies(TIMEOUT_MS);
	int got = 0;

	while (got < n && time_before(jiffies, end)) {
		int k = ib_poll_cq(cq, n - got, wc + got);

		if (k < 0)
			return k;
		got += k;
		if (!k)
			usleep_range(100, 200);
	}
	return got;
}

static void ev_handler(struct ib_cq *cq, void *ctx)
{
	complete(ctx);
}

static int to_rts(struct ib_qp *qp, u32 dqpn, const struct ib_gid_attr *gid)
{
	struct ib_qp_attr a = {};
	union ib_gid dgid = gid->gid;
	int ret;

	a.qp_state = IB_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ |
			    IB_ACCESS_REMOTE_ATOMIC;
	ret = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
			   IB_QP_ACCESS_FLAGS);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTR;
	a.path_mtu = IB_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = 0x1234;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	a.ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&a.ah_attr, 1);
	rdma_ah_set_grh(&a.ah_attr, &dgid, 0, gid->index, 64, 0);
	ret = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN |
			   IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0x1234;
	a.max_rd_atomic = 4;
	return ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_TIMEOUT | IB_QP_RETRY_CNT |
			    IB_QP_RNR_RETRY | IB_QP_SQ_PSN | IB_QP_MAX_QP_RD_ATOMIC);
}

static int post_recv(struct run *r, struct side *s, u64 id, u32 off, u32 len)
{
	struct ib_sge sge = { .addr = s->dma + off, .length = len,
			      .lkey = r->pd->local_dma_lkey };
	struct ib_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };

	return ib_post_recv(s->qp, &wr, NULL);
}

/* Posts one signalled request of `op` from a's buffer at `off` (`len` bytes). */
static int post(struct run *r, enum ib_wr_opcode op, u64 id, u32 off, u32 len,
		u64 raddr, u32 rkey, u64 cmp_add, u64 swap, __be32 imm)
{
	struct ib_sge sge = { .addr = r->a.dma + off, .length = len,
			      .lkey = r->pd->local_dma_lkey };
	struct ib_atomic_wr aw = {};
	struct ib_rdma_wr rw = {};
	struct ib_send_wr *wr;

	if (op == IB_WR_ATOMIC_CMP_AND_SWP || op == IB_WR_ATOMIC_FETCH_AND_ADD) {
		aw.remote_addr = raddr;
		aw.rkey = rkey;
		aw.compare_add = cmp_add;
		aw.swap = swap;
		wr = &aw.wr;
	} else {
		rw.remote_addr = raddr;
		rw.rkey = rkey;
		wr = &rw.wr;
	}
	wr->wr_id = id;
	wr->opcode = op;
	wr->send_flags = IB_SEND_SIGNALED;
	wr->sg_list = &sge;
	wr->num_sge = 1;
	wr->ex.imm_data = imm;
	return ib_post_send(r->a.qp, wr, NULL);
}

static void run_checks(struct run *r, const struct ib_gid_attr *gid)
{
	struct ib_wc wc[4] = {};
	u32 rkey = r->pd->unsafe_global_rkey;
	u64 *word;
	int n, ret, i;
	u8 *pa = r->a.buf, *pb = r->b.buf;

	ret = to_rts(r->a.qp, r->b.qp->qp_num, gid);
	if (!ret)
		ret = to_rts(r->b.qp, r->a.qp->qp_num, gid);
	CHECK(r, "connect", !ret, "modify to RTS: %d", ret);
	if (ret)
		return;

	/* SEND with immediate into a posted receive. */
	for (i = 0; i < 256; i++)
		pa[i] = i ^ 0x5a;
	post_recv(r, &r->b, 100, 0, 512);
	ret = post(r, IB_WR_SEND_WITH_IMM, 1, 0, 256, 0, 0, 0, 0, cpu_to_be32(0xc0ffee));
	n = poll_n(r->cq, wc, 2);
	{
		struct ib_wc *s = wc[0].wr_id == 1 ? &wc[0] : &wc[1];
		struct ib_wc *v = wc[0].wr_id == 1 ? &wc[1] : &wc[0];

		CHECK(r, "send+imm", !ret && n == 2 && s->status == IB_WC_SUCCESS &&
		      s->opcode == IB_WC_SEND && v->status == IB_WC_SUCCESS &&
		      v->opcode == IB_WC_RECV && v->byte_len == 256 &&
		      (v->wc_flags & IB_WC_WITH_IMM) && be32_to_cpu(v->ex.imm_data) == 0xc0ffee &&
		      v->qp == r->b.qp && v->src_qp == r->a.qp->qp_num && !memcmp(pa, pb, 256),
		      "post %d, %d completions, status %d/%d opcode %d/%d len %u flags %#x imm %#x",
		      ret, n, s->status, v->status, s->opcode, v->opcode, v->byte_len,
		      v->wc_flags, be32_to_cpu(v->ex.imm_data));
	}

	/* RDMA WRITE, then WRITE with immediate (consumes a receive). */
	for (i = 0; i < 2048; i++)
		pa[1024 + i] = (i * 7) & 0xff;
	ret = post(r, IB_WR_RDMA_WRITE, 2, 1024, 2048, r->b.dma + 1024, rkey, 0, 0, 0);
	n = poll_n(r->cq, wc, 1);
	CHECK(r, "rdma write", !ret && n == 1 && wc[0].status == IB_WC_SUCCESS &&
	      wc[0].opcode == IB_WC_RDMA_WRITE && wc[0].wr_id == 2 &&
	      !memcmp(pa + 1024, pb + 1024, 2048),
	      "post %d, %d completions, status %d opcode %d", ret, n, wc[0].status, wc[0].opcode);
	post_recv(r, &r->b, 101, 0, 16);
	ret = post(r, IB_WR_RDMA_WRITE_WITH_IMM, 3, 0, 64, r->b.dma + 3072, rkey, 0, 0,
		   cpu_to_be32(7));
	n = poll_n(r->cq, wc, 2);
	{
		struct ib_wc *v = wc[0].wr_id == 101 ? &wc[0] : &wc[1];

		CHECK(r, "rdma write+imm", !ret && n == 2 && v->wr_id == 101 &&
		      v->status == IB_WC_SUCCESS && v->opcode == IB_WC_RECV_RDMA_WITH_IMM &&
		      be32_to_cpu(v->ex.imm_data) == 7 && !memcmp(pa, pb + 3072, 64),
		      "post %d, %d completions, status %d opcode %d imm %u", ret, n, v->status,
		      v->opcode, be32_to_cpu(v->ex.imm_data));
	}

	/* RDMA READ of b's buffer into a's. */
	for (i = 0; i < 1500; i++)
		pb[2048 + i] = (i * 13) & 0xff;
	memset(pa + 2048, 0, 1500);
	ret = post(r, IB_WR_RDMA_READ, 4, 2048, 1500, r->b.dma + 2048, rkey, 0, 0, 0);
	n = poll_n(r->cq, wc, 1);
	CHECK(r, "rdma read", !ret && n == 1 && wc[0].status == IB_WC_SUCCESS &&
	      wc[0].opcode == IB_WC_RDMA_READ && wc[0].byte_len == 1500 &&
	      !memcmp(pa + 2048, pb + 2048, 1500),
	      "post %d, %d completions, status %d opcode %d len %u", ret, n, wc[0].status,
	      wc[0].opcode, wc[0].byte_len);

	/*
	 * An atomic through the PD's global rkey: ib_alloc_pd(IB_PD_UNSAFE_GLOBAL_RKEY) gives it
	 * remote read and write rights only, so the responder refuses it (remote access error),
	 * the word is unchanged, and a's next request is flushed.
	 */
	word = (u64 *)(pb + 3584);
	*word = 40;
	ret = post(r, IB_WR_ATOMIC_FETCH_AND_ADD, 5, 3584, 8, r->b.dma + 3584, rkey, 2, 0, 0);
	n = poll_n(r->cq, wc, 1);
	CHECK(r, "atomic without the MR's atomic right", !ret && n == 1 && wc[0].wr_id == 5 &&
	      wc[0].status == IB_WC_REM_ACCESS_ERR && *word == 40,
	      "post %d, %d completions, status %d (%s), word %llu", ret, n, wc[0].status,
	      ib_wc_status_msg(wc[0].status), *word);
	ret = post(r, IB_WR_SEND, 6, 0, 16, 0, 0, 0, 0, 0);
	n = poll_n(r->cq, wc, 1);
	CHECK(r, "flush after error", !ret && n == 1 && wc[0].wr_id == 6 &&
	      wc[0].status == IB_WC_WR_FLUSH_ERR,
	      "post %d, %d completions, status %d (%s)", ret, n, wc[0].status,
	      ib_wc_status_msg(wc[0].status));

	/* Both QPs back to RESET and connected again, as a ULP reconnects: traffic flows. */
	{
		struct ib_qp_attr a = { .qp_state = IB_QPS_RESET };

		ret = ib_modify_qp(r->a.qp, &a, IB_QP_STATE);
		ret = ret ?: ib_modify_qp(r->b.qp, &a, IB_QP_STATE);
		while (ib_poll_cq(r->cq, 4, wc) > 0)
			;
		ret = ret ?: to_rts(r->a.qp, r->b.qp->qp_num, gid);
		ret = ret ?: to_rts(r->b.qp, r->a.qp->qp_num, gid);
		post_recv(r, &r->b, 102, 0, 512);
		ret = ret ?: post(r, IB_WR_SEND, 7, 0, 100, 0, 0, 0, 0, 0);
		n = poll_n(r->cq, wc, 2);
		CHECK(r, "reset and reconnect", !ret && n == 2 && wc[0].status == IB_WC_SUCCESS &&
		      wc[1].status == IB_WC_SUCCESS, "ret %d, %d completions, status %d/%d", ret, n,
		      wc[0].status, wc[1].status);
	}

	/*
	 * Fast registration: b maps its buffer into an MR (one 4 KiB page) and registers it
	 * with remote read, write and atomic rights under a new key variant (IB_WR_REG_MR on
	 * its QP); a's atomics through that rkey work; b invalidates it (IB_WR_LOCAL_INV); a's
	 * next WRITE through it is refused and writes nothing.
	 */
	{
		struct ib_mr *mr = ib_alloc_mr(r->pd, IB_MR_TYPE_MEM_REG, 2);
		struct ib_reg_wr reg = {};
		struct ib_send_wr inv = {};
		struct scatterlist sg;
		u32 frkey;

		if (IS_ERR(mr)) {
			CHECK(r, "fast registration", 0, "alloc_mr %ld", PTR_ERR(mr));
			return;
		}
		sg_init_table(&sg, 1);
		sg_dma_address(&sg) = r->b.dma;
		sg_dma_len(&sg) = BUF;
		n = ib_map_mr_sg(mr, &sg, 1, NULL, PAGE_SIZE);
		ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
		frkey = mr->rkey;
		reg.wr.wr_id = 20;
		reg.wr.opcode = IB_WR_REG_MR;
		reg.wr.send_flags = IB_SEND_SIGNALED;
		reg.mr = mr;
		reg.key = frkey;
		reg.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ |
			     IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC;
		ret = n == 1 ? ib_post_send(r->b.qp, &reg.wr, NULL) : -EINVAL;
		i = ret ? 0 : poll_n(r->cq, wc, 1);
		CHECK(r, "fast registration", n == 1 && !ret && i == 1 && wc[0].wr_id == 20 &&
		      wc[0].status == IB_WC_SUCCESS && wc[0].opcode == IB_WC_REG_MR &&
		      mr->iova == r->b.dma && mr->length == BUF,
		      "map %d, post %d, %d completions, status %d (%s) opcode %d", n, ret, i,
		      wc[0].status, ib_wc_status_msg(wc[0].status), wc[0].opcode);

		word = (u64 *)(pb + 3584);
		*word = 40;
		ret = post(r, IB_WR_ATOMIC_FETCH_AND_ADD, 21, 3584, 8, mr->iova + 3584, frkey, 2,
			   0, 0);
		n = poll_n(r->cq, wc, 1);
		CHECK(r, "fetch-add", !ret && n == 1 && wc[0].status == IB_WC_SUCCESS &&
		      wc[0].opcode == IB_WC_FETCH_ADD && *(u64 *)(pa + 3584) == 40 && *word == 42,
		      "post %d, %d completions, status %d, old %llu, now %llu", ret, n,
		      wc[0].status, *(u64 *)(pa + 3584), *word);
		ret = post(r, IB_WR_ATOMIC_CMP_AND_SWP, 22, 3592, 8, mr->iova + 3584, frkey, 42, 99,
			   0);
		n = poll_n(r->cq, wc, 1);
		CHECK(r, "compare-swap", !ret && n == 1 && wc[0].status == IB_WC_SUCCESS &&
		      wc[0].opcode == IB_WC_COMP_SWAP && *(u64 *)(pa + 3592) == 42 && *word == 99,
		      "post %d, %d completions, status %d, old %llu, now %llu", ret, n,
		      wc[0].status, *(u64 *)(pa + 3592), *word);

		inv.wr_id = 23;
		inv.opcode = IB_WR_LOCAL_INV;
		inv.send_flags = IB_SEND_SIGNALED;
		inv.ex.invalidate_rkey = frkey;
		ret = ib_post_send(r->b.qp, &inv, NULL);
		n = ret ? 0 : poll_n(r->cq, wc, 1);
		CHECK(r, "local invalidate", !ret && n == 1 && wc[0].wr_id == 23 &&
		      wc[0].status == IB_WC_SUCCESS && wc[0].opcode == IB_WC_LOCAL_INV,
		      "post %d, %d completions, status %d (%s) opcode %d", ret, n, wc[0].status,
		      ib_wc_status_msg(wc[0].status), wc[0].opcode);

		memset(pb + 1024, 0xee, 64);
		ret = post(r, IB_WR_RDMA_WRITE, 24, 0, 64, mr->iova + 1024, frkey, 0, 0, 0);
		n = poll_n(r->cq, wc, 1);
		CHECK(r, "write after invalidate refused", !ret && n == 1 && wc[0].wr_id == 24 &&
		      wc[0].status == IB_WC_REM_ACCESS_ERR && pb[1024] == 0xee && pb[1087] == 0xee,
		      "post %d, %d completions, status %d (%s)", ret, n, wc[0].status,
		      ib_wc_status_msg(wc[0].status));
		ib_dereg_mr(mr);
	}
}

static void test_events(struct run *r)
{
	struct ib_qp_init_attr qa = {
		.qp_type = IB_QPT_UD, .sq_sig_type = IB_SIGNAL_ALL_WR,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ib_qp_attr a = {};
	struct ib_qp *qp;
	struct ib_wc wc;
	int ret;

	/* A UD QP whose send CQ is armed: its completion raises the CQ's event. */
	qa.send_cq = r->ev_cq;
	qa.recv_cq = r->cq;
	qp = ib_create_qp(r->pd, &qa);
	if (IS_ERR(qp)) {
		CHECK(r, "cq event", 0, "create UD QP: %ld", PTR_ERR(qp));
		return;
	}
	a.qp_state = IB_QPS_INIT;
	a.port_num = 1;
	a.qkey = 0x11111111;
	ret = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_QKEY);
	a.qp_state = IB_QPS_RTR;
	ret = ret ?: ib_modify_qp(qp, &a, IB_QP_STATE);
	a.qp_state = IB_QPS_RTS;
	a.sq_psn = 0;
	ret = ret ?: ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_SQ_PSN);
	reinit_completion(&r->ev);
	ret = ret ?: ib_req_notify_cq(r->ev_cq, IB_CQ_NEXT_COMP);
	if (!ret) {
		/* A UD send with no address handle is refused by the driver... */
		struct ib_ud_wr uw = {};
		const struct ib_send_wr *bad = NULL;

		uw.wr.wr_id = 9;
		uw.wr.opcode = IB_WR_SEND;
		uw.wr.send_flags = IB_SEND_SIGNALED;
		ret = ib_post_send(qp, &uw.wr, &bad);
		CHECK(r, "ud send without AH refused", ret == -EINVAL && bad == &uw.wr,
		      "post %d, bad %s", ret, bad == &uw.wr ? "set" : "not set");
		ret = 0;
	}
	/* ...and a NOP-like send to the QP's own number through an AH completes. */
	if (!ret) {
		struct rdma_ah_attr ah = {};
		const struct ib_gid_attr *g = rdma_get_gid_attr(r->ib, 1, 0);
		struct ib_ah *ahp;
		struct ib_ud_wr uw = {};

		if (IS_ERR(g)) {
			ret = PTR_ERR(g);
		} else {
			union ib_gid dgid = g->gid;

			ah.type = RDMA_AH_ATTR_TYPE_ROCE;
			rdma_ah_set_port_num(&ah, 1);
			rdma_ah_set_grh(&ah, &dgid, 0, g->index, 64, 0);
			rdma_get_ll_mac((struct in6_addr *)g->gid.raw, ah.roce.dmac);
			ahp = rdma_create_ah(r->pd, &ah, RDMA_CREATE_AH_SLEEPABLE);
			rdma_put_gid_attr(g);
			if (IS_ERR(ahp)) {
				ret = PTR_ERR(ahp);
			} else {
				uw.wr.wr_id = 10;
				uw.wr.opcode = IB_WR_SEND;
				uw.wr.send_flags = IB_SEND_SIGNALED;
				uw.ah = ahp;
				uw.remote_qpn = qp->qp_num;
				uw.remote_qkey = 0x11111111;
				ret = ib_post_send(qp, &uw.wr, NULL);
				if (!ret && !wait_for_completion_timeout(&r->ev,
									 msecs_to_jiffies(TIMEOUT_MS)))
					ret = -ETIMEDOUT;
				if (!ret)
					ret = poll_n(r->ev_cq, &wc, 1) == 1 && wc.wr_id == 10 &&
					      wc.status == IB_WC_SUCCESS ? 0 : -EIO;
				rdma_destroy_ah(ahp, RDMA_DESTROY_AH_SLEEPABLE);
			}
		}
	}
	CHECK(r, "cq event", !ret, "%d", ret);
	ib_destroy_qp(qp);
}

/*
 * CQ moderation through the driver's modify_cq: the limits the device reports (the card's
 * 16-bit count, 12-bit period), a period beyond them refused, a valid one accepted.
 */
static void test_moderation(struct run *r)
{
	const struct ib_cq_caps *cc = &r->ib->attrs.cq_caps;
	int bad = rdma_set_cq_moderation(r->ev_cq, 1, cc->max_cq_moderation_period + 1);
	int ok = rdma_set_cq_moderation(r->ev_cq, 8, 16);

	CHECK(r, "cq moderation",
	      cc->max_cq_moderation_count == 0xffff && cc->max_cq_moderation_period == 0xfff &&
	      bad == -EINVAL && ok == 0,
	      "caps count %u period %u; period %u: %d; 8 CQEs/16 us: %d",
	      cc->max_cq_moderation_count, cc->max_cq_moderation_period,
	      cc->max_cq_moderation_period + 1, bad, ok);
}

/*
 * A kernel SRQ and inline sends, as ULPs use them (nvmet-rdma's SRQs; SMC's inline sends):
 * an RC QP c receiving from an SRQ of 8 requests (the driver makes it 15) connected to an RC
 * QP d created for 128 bytes of inline data. d's inline SENDs copy from a's buffer at post
 * time (the source changes right after the post; c receives the bytes as they were); the
 * receives complete with the SRQ requests' cookies in posting order, on c; 20 more go through
 * the SRQ's 15 WQEs in rounds of 5 (its free list cycles); a chain of 16 receives is refused
 * at the 16th (the SRQ holds 15); an inline send beyond the QP's inline size is refused.
 */
/* test_srq_inline's arrays, off the stack. */
struct srq_bufs {
	struct ib_recv_wr rw[16];
	struct ib_sge rsg[16];
	struct ib_wc wc[10];
	struct ib_qp_init_attr qi;
	struct ib_qp_attr qattr;
};

static void test_srq_inline(struct run *r, const struct ib_gid_attr *gid)
{
	struct ib_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ib_qp_init_attr qa = {
		.qp_type = IB_QPT_RC, .sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 16, .max_recv_wr = 0, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.send_cq = r->cq, .recv_cq = r->cq,
	};
	struct srq_bufs *t;
	const struct ib_recv_wr *rbad = NULL;
	const struct ib_send_wr *sbad = NULL;
	struct ib_qp *c = NULL, *d = NULL;
	struct ib_srq *srq;
	u8 *pa = r->a.buf, *pb = r->b.buf, want[100];
	int ret, n, i, k, round, bad = 0;

	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t) {
		CHECK(r, "srq receives inline sends", 0, "no memory");
		return;
	}
	srq = ib_create_srq(r->pd, &sa);
	if (IS_ERR(srq)) {
		CHECK(r, "srq receives inline sends", 0, "create SRQ %ld", PTR_ERR(srq));
		kfree(t);
		return;
	}
	qa.srq = srq;
	c = ib_create_qp(r->pd, &qa);
	qa.srq = NULL;
	qa.cap.max_recv_wr = 1;
	qa.cap.max_inline_data = 128;
	d = IS_ERR(c) ? ERR_PTR(-EINVAL) : ib_create_qp(r->pd, &qa);
	if (IS_ERR(c) || IS_ERR(d)) {
		CHECK(r, "srq receives inline sends", 0, "create QPs %ld/%ld", PTR_ERR(c),
		      PTR_ERR(d));
		goto out;
	}
	ret = to_rts(c, d->qp_num, gid) ?: to_rts(d, c->qp_num, gid);
	ret = ret ?: ib_query_qp(d, &t->qattr, IB_QP_CAP, &t->qi);
	if (ret || t->qi.cap.max_inline_data < 128) {
		CHECK(r, "srq receives inline sends", 0, "connect/query %d, inline %u", ret,
		      t->qi.cap.max_inline_data);
		goto out;
	}

	for (i = 0; i < 16; i++) {
		t->rsg[i] = (struct ib_sge){ .addr = r->b.dma + (i % 8) * 128, .length = 128,
					     .lkey = r->pd->local_dma_lkey };
		t->rw[i] = (struct ib_recv_wr){ .wr_id = 200 + i, .sg_list = &t->rsg[i],
						.num_sge = 1, .next = i < 15 ? &t->rw[i + 1] : NULL };
	}
	/* Three receives, three inline sends whose source changes after each post. */
	t->rw[2].next = NULL;
	ret = ib_post_srq_recv(srq, t->rw, &rbad);
	t->rw[2].next = &t->rw[3];
	for (i = 0; i < 3 && !ret; i++) {
		struct ib_sge sg = { .addr = (uintptr_t)(pa + 256), .length = 100 };
		struct ib_send_wr sw = { .wr_id = 300 + i, .opcode = IB_WR_SEND,
					 .send_flags = IB_SEND_SIGNALED | IB_SEND_INLINE,
					 .sg_list = &sg, .num_sge = 1 };

		memset(pa + 256, 0x30 + i, 100);
		ret = ib_post_send(d, &sw, &sbad);
		memset(pa + 256, 0xff, 100);
	}
	n = ret ? 0 : poll_n(r->cq, t->wc, 6);
	for (i = 0, k = 0; i < n; i++) {
		if (t->wc[i].wr_id < 300) {
			memset(want, 0x30 + k, 100);
			if (t->wc[i].wr_id != 200 + k || t->wc[i].status != IB_WC_SUCCESS ||
			    t->wc[i].opcode != IB_WC_RECV || t->wc[i].byte_len != 100 ||
			    t->wc[i].qp != c || memcmp(pb + k * 128, want, 100))
				bad++;
			k++;
		} else if (t->wc[i].status != IB_WC_SUCCESS || t->wc[i].opcode != IB_WC_SEND) {
			bad++;
		}
	}
	CHECK(r, "srq receives inline sends", !ret && n == 6 && k == 3 && !bad,
	      "post %d, %d completions (%d receives), %d wrong; first status %d id %llu",
	      ret, n, k, bad, t->wc[0].status, t->wc[0].wr_id);

	/* 20 more through the SRQ in rounds of 5 (its 15 WQEs cycle). */
	for (round = 0, bad = 0, ret = 0; round < 4 && !ret; round++) {
		t->rw[4].next = NULL;
		for (i = 0; i < 5; i++)
			t->rw[i].wr_id = 400 + round * 5 + i;
		ret = ib_post_srq_recv(srq, t->rw, &rbad);
		for (i = 0; i < 5 && !ret; i++) {
			struct ib_sge sg = { .addr = (uintptr_t)(pa + 256 + i), .length = 64 };
			struct ib_send_wr sw = { .wr_id = 500, .opcode = IB_WR_SEND,
						 .send_flags = IB_SEND_SIGNALED | IB_SEND_INLINE,
						 .sg_list = &sg, .num_sge = 1 };

			ret = ib_post_send(d, &sw, &sbad);
		}
		n = ret ? 0 : poll_n(r->cq, t->wc, 10);
		for (i = 0, k = 0; i < n; i++) {
			if (t->wc[i].status != IB_WC_SUCCESS)
				bad++;
			else if (t->wc[i].wr_id != 500 && t->wc[i].wr_id != 400 + round * 5 + k++)
				bad++;
		}
		if (n != 10 || k != 5)
			bad++;
	}
	t->rw[4].next = &t->rw[5];
	CHECK(r, "srq reuse", !ret && !bad, "post %d, %d rounds, %d wrong", ret, round, bad);

	/* The SRQ holds 15: a chain of 16 stops at the 16th. */
	t->rw[15].next = NULL;
	rbad = NULL;
	ret = ib_post_srq_recv(srq, t->rw, &rbad);
	CHECK(r, "srq full", ret == -ENOMEM && rbad == &t->rw[15], "post %d, bad %td", ret,
	      rbad ? rbad - t->rw : -1);

	/* More inline data than the QP was created for. */
	{
		struct ib_sge sg = { .addr = (uintptr_t)pa,
				     .length = t->qi.cap.max_inline_data + 1 };
		struct ib_send_wr sw = { .wr_id = 600, .opcode = IB_WR_SEND,
					 .send_flags = IB_SEND_SIGNALED | IB_SEND_INLINE,
					 .sg_list = &sg, .num_sge = 1 };

		sbad = NULL;
		ret = t->qi.cap.max_inline_data < BUF ? ib_post_send(d, &sw, &sbad) : 0;
		CHECK(r, "inline beyond the QP's size refused", ret == -ENOMEM && sbad == &sw,
		      "post %d with %u bytes", ret, sg.length);
	}
out:
	if (!IS_ERR_OR_NULL(d))
		ib_destroy_qp(d);
	if (!IS_ERR_OR_NULL(c))
		ib_destroy_qp(c);
	ib_destroy_srq(srq);
	kfree(t);
}

static int side_init(struct run *r, struct side *s)
{
	struct ib_qp_init_attr qa = {
		.qp_type = IB_QPT_RC, .sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 2,
			 .max_recv_sge = 2 },
		.send_cq = r->cq, .recv_cq = r->cq,
	};

	s->buf = kzalloc(BUF, GFP_KERNEL);
	if (!s->buf)
		return -ENOMEM;
	s->dma = ib_dma_map_single(r->ib, s->buf, BUF, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(r->ib, s->dma)) {
		kfree(s->buf);
		s->buf = NULL;
		return -ENOMEM;
	}
	s->qp = ib_create_qp(r->pd, &qa);
	if (IS_ERR(s->qp)) {
		int ret = PTR_ERR(s->qp);

		s->qp = NULL;
		return ret;
	}
	return 0;
}

static void side_fini(struct run *r, struct side *s)
{
	if (s->qp)
		ib_destroy_qp(s->qp);
	if (s->buf) {
		ib_dma_unmap_single(r->ib, s->dma, BUF, DMA_BIDIRECTIONAL);
		kfree(s->buf);
	}
	s->qp = NULL;
	s->buf = NULL;
}

/* One run over the port's first GID of `type` (and, for RoCE v2, an IPv4 address). */
static void run_over(struct ib_device *ib, enum ib_gid_type type, const char *what)
{
	const struct ib_gid_attr *gid = NULL;
	struct run *r;
	int i, ret;

	for (i = 0; i < ib->port_data[1].immutable.gid_tbl_len; i++) {
		const struct ib_gid_attr *g = rdma_get_gid_attr(ib, 1, i);

		if (IS_ERR(g))
			continue;
		if (g->gid_type == type &&
		    (type == IB_GID_TYPE_ROCE ? rdma_link_local_addr((struct in6_addr *)g->gid.raw)
		     : ipv6_addr_v4mapped((struct in6_addr *)g->gid.raw))) {
			gid = g;
			break;
		}
		rdma_put_gid_attr(g);
	}
	if (!gid) {
		pr_info("kverbs: FAIL %s: no such GID\n", what);
		return;
	}
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		goto out;
	r->ib = ib;
	init_completion(&r->ev);
	r->pd = ib_alloc_pd(ib, IB_PD_UNSAFE_GLOBAL_RKEY);
	if (IS_ERR(r->pd)) {
		pr_info("kverbs: FAIL %s: alloc pd %ld\n", what, PTR_ERR(r->pd));
		goto free;
	}
	r->cq = ib_alloc_cq(ib, NULL, 64, 0, IB_POLL_DIRECT);
	if (IS_ERR(r->cq)) {
		pr_info("kverbs: FAIL %s: alloc cq %ld\n", what, PTR_ERR(r->cq));
		goto pd;
	}
	{
		struct ib_cq_init_attr ca = { .cqe = 8 };

		r->ev_cq = ib_create_cq(ib, ev_handler, NULL, &r->ev, &ca);
	}
	if (IS_ERR(r->ev_cq)) {
		pr_info("kverbs: FAIL %s: create cq %ld\n", what, PTR_ERR(r->ev_cq));
		goto cq;
	}
	ret = side_init(r, &r->a);
	ret = ret ?: side_init(r, &r->b);
	if (ret) {
		pr_info("kverbs: FAIL %s: create QPs %d\n", what, ret);
	} else {
		pr_info("kverbs: %s: GID index %u %pI6, QPs %#x and %#x\n", what, gid->index,
			gid->gid.raw, r->a.qp->qp_num, r->b.qp->qp_num);
		run_checks(r, gid);
		test_events(r);
		test_moderation(r);
		test_srq_inline(r, gid);
	}
	side_fini(r, &r->b);
	side_fini(r, &r->a);
	ib_destroy_cq(r->ev_cq);
cq:
	ib_free_cq(r->cq);
pd:
	if (!IS_ERR(r->pd))
		ib_dealloc_pd(r->pd);
	pr_info("kverbs: %s done: %d passed, %d failed\n", what, r->passed, r->failed);
free:
	kfree(r);
out:
	rdma_put_gid_attr(gid);
}

static int kverbs_add(struct ib_device *ib)
{
	if (strcmp(dev_name(&ib->dev), dev))
		return -EOPNOTSUPP;
	run_over(ib, IB_GID_TYPE_ROCE_UDP_ENCAP, "RoCE v2");
	run_over(ib, IB_GID_TYPE_ROCE, "RoCE v1");
	return -EOPNOTSUPP;
}

static void kverbs_remove(struct ib_device *ib, void *data)
{
}

static struct ib_client kverbs_client = {
	.name = "kverbs_test",
	.add = kverbs_add,
	.remove = kverbs_remove,
};

static int __init kverbs_init(void)
{
	return ib_register_client(&kverbs_client);
}

static void __exit kverbs_exit(void)
{
	ib_unregister_client(&kverbs_client);
}

module_init(kverbs_init);
module_exit(kverbs_exit);
MODULE_DESCRIPTION("cx4 tests: kernel verbs over a device's looped-back RC QPs");
MODULE_LICENSE("GPL");
