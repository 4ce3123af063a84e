// SPDX-License-Identifier: GPL-2.0
/*
 * C shims for static inline functions and macros of the APIs in bindings_helper.h, which Rust
 * cannot call directly (the kernel's rust/helpers/ for the APIs the kernel crate lacks). One
 * line of C each, no logic: anything more belongs in Rust.
 *
 * Sorted by header, then alphabetically.
 */

#include "helpers.h"

#include <trace/events/xdp.h>

/* <net/devlink.h> */

struct devlink *ksys_helper_devlink_alloc(const struct devlink_ops *ops, size_t priv_size,
					  struct device *dev)
{
	return devlink_alloc(ops, priv_size, dev);
}

/* <linux/dma-mapping.h> */

dma_addr_t ksys_helper_dma_map_single(struct device *dev, void *ptr, size_t size,
				      enum dma_data_direction dir)
{
	return dma_map_single(dev, ptr, size, dir);
}

int ksys_helper_dma_mapping_error(struct device *dev, dma_addr_t addr)
{
	return dma_mapping_error(dev, addr);
}

void ksys_helper_dma_unmap_page(struct device *dev, dma_addr_t addr, size_t size,
				enum dma_data_direction dir)
{
	dma_unmap_page(dev, addr, size, dir);
}

void ksys_helper_dma_unmap_single(struct device *dev, dma_addr_t addr, size_t size,
				  enum dma_data_direction dir)
{
	dma_unmap_single(dev, addr, size, dir);
}

/* <linux/etherdevice.h> */

void ksys_helper_eth_hw_addr_set(struct net_device *dev, const u8 *addr)
{
	eth_hw_addr_set(dev, addr);
}

bool ksys_helper_is_valid_ether_addr(const u8 *addr)
{
	return is_valid_ether_addr(addr);
}

/* <linux/mm.h> */

void *ksys_helper_page_address(const struct page *page)
{
	return page_address(page);
}

/* <linux/netdevice.h> */

bool ksys_helper___netdev_tx_sent_queue(struct netdev_queue *txq, unsigned int bytes,
					bool xmit_more)
{
	return __netdev_tx_sent_queue(txq, bytes, xmit_more);
}

void ksys_helper_dev_kfree_skb_any(struct sk_buff *skb)
{
	dev_kfree_skb_any(skb);
}

gro_result_t ksys_helper_napi_gro_receive(struct napi_struct *napi, struct sk_buff *skb)
{
	return napi_gro_receive(napi, skb);
}

bool ksys_helper_napi_schedule(struct napi_struct *napi)
{
	return napi_schedule(napi);
}

struct netdev_queue *ksys_helper_netdev_get_tx_queue(const struct net_device *dev,
						     unsigned int index)
{
	return netdev_get_tx_queue(dev, index);
}

void *ksys_helper_netdev_priv(const struct net_device *dev)
{
	return netdev_priv(dev);
}

void ksys_helper_netdev_tx_completed_queue(struct netdev_queue *txq, unsigned int pkts,
					   unsigned int bytes)
{
	netdev_tx_completed_queue(txq, pkts, bytes);
}

void ksys_helper_netdev_tx_reset_queue(struct netdev_queue *txq)
{
	netdev_tx_reset_queue(txq);
}

bool ksys_helper_netdev_xmit_more(void)
{
	return netdev_xmit_more();
}

bool ksys_helper_netif_carrier_ok(const struct net_device *dev)
{
	return netif_carrier_ok(dev);
}

void ksys_helper_netif_napi_add(struct net_device *dev, struct napi_struct *napi,
				int (*poll)(struct napi_struct *, int))
{
	netif_napi_add(dev, napi, poll);
}

void ksys_helper_netif_napi_add_config(struct net_device *dev, struct napi_struct *napi,
				       int (*poll)(struct napi_struct *, int), int index)
{
	netif_napi_add_config(dev, napi, poll, index);
}

void ksys_helper_netif_napi_del(struct napi_struct *napi)
{
	netif_napi_del(napi);
}

void ksys_helper_netif_napi_set_irq(struct napi_struct *napi, int irq)
{
	netif_napi_set_irq(napi, irq);
}

bool ksys_helper_netif_running(const struct net_device *dev)
{
	return netif_running(dev);
}

void ksys_helper_netif_tx_start_queue(struct netdev_queue *txq)
{
	netif_tx_start_queue(txq);
}

bool ksys_helper_netif_tx_queue_stopped(const struct netdev_queue *txq)
{
	return netif_tx_queue_stopped(txq);
}

void ksys_helper_netif_tx_stop_queue(struct netdev_queue *txq)
{
	netif_tx_stop_queue(txq);
}

void ksys_helper_set_netdev_dev(struct net_device *net, struct device *pdev)
{
	SET_NETDEV_DEV(net, pdev);
}

/* <linux/skbuff.h>, <linux/tcp.h>, <linux/if_vlan.h> */

void ksys_helper___vlan_hwaccel_put_tag(struct sk_buff *skb, __be16 proto, u16 tci)
{
	__vlan_hwaccel_put_tag(skb, proto, tci);
}

void ksys_helper_skb_add_rx_frag(struct sk_buff *skb, int i, struct page *page, int off,
				 int size, unsigned int truesize)
{
	skb_add_rx_frag(skb, i, page, off, size, truesize);
}

int ksys_helper_skb_checksum_start_offset(const struct sk_buff *skb)
{
	return skb_checksum_start_offset(skb);
}

/* A field in an anonymous union of struct sk_buff. */
u16 ksys_helper_skb_csum_offset(const struct sk_buff *skb)
{
	return skb->csum_offset;
}

/* A bit-field of struct sk_buff. */
bool ksys_helper_skb_encapsulation(const struct sk_buff *skb)
{
	return skb->encapsulation;
}

dma_addr_t ksys_helper_skb_frag_dma_map(struct device *dev, const skb_frag_t *frag)
{
	return skb_frag_dma_map(dev, frag);
}

unsigned int ksys_helper_skb_frag_size(const skb_frag_t *frag)
{
	return skb_frag_size(frag);
}

u16 ksys_helper_skb_get_queue_mapping(const struct sk_buff *skb)
{
	return skb_get_queue_mapping(skb);
}

unsigned int ksys_helper_skb_headlen(const struct sk_buff *skb)
{
	return skb_headlen(skb);
}

int ksys_helper_skb_inner_network_offset(const struct sk_buff *skb)
{
	return skb_inner_network_offset(skb);
}

int ksys_helper_skb_inner_tcp_all_headers(const struct sk_buff *skb)
{
	return skb_inner_tcp_all_headers(skb);
}

int ksys_helper_skb_inner_transport_offset(const struct sk_buff *skb)
{
	return skb_inner_transport_offset(skb);
}

/* A bit-field of struct sk_buff. */
u8 ksys_helper_skb_ip_summed(const struct sk_buff *skb)
{
	return skb->ip_summed;
}

bool ksys_helper_skb_is_gso(const struct sk_buff *skb)
{
	return skb_is_gso(skb);
}

void ksys_helper_skb_mark_for_recycle(struct sk_buff *skb)
{
	skb_mark_for_recycle(skb);
}

int ksys_helper_skb_network_offset(const struct sk_buff *skb)
{
	return skb_network_offset(skb);
}

/* A field in the `headers` group of struct sk_buff. */
__be16 ksys_helper_skb_protocol(const struct sk_buff *skb)
{
	return skb->protocol;
}

void ksys_helper_skb_record_rx_queue(struct sk_buff *skb, u16 rx_queue)
{
	skb_record_rx_queue(skb, rx_queue);
}

void ksys_helper_skb_reserve(struct sk_buff *skb, int len)
{
	skb_reserve(skb, len);
}

/* A field in an anonymous union of struct sk_buff. */
void ksys_helper_skb_set_csum(struct sk_buff *skb, __wsum csum)
{
	skb->csum = csum;
}

/* A bit-field of struct sk_buff. */
void ksys_helper_skb_set_csum_level(struct sk_buff *skb, u8 level)
{
	skb->csum_level = level;
}

void ksys_helper_skb_set_hash(struct sk_buff *skb, __u32 hash, enum pkt_hash_types type)
{
	skb_set_hash(skb, hash, type);
}

/* A bit-field of struct sk_buff. */
void ksys_helper_skb_set_ip_summed(struct sk_buff *skb, u8 ip_summed)
{
	skb->ip_summed = ip_summed;
}

/* A field in the `headers` group of struct sk_buff. */
void ksys_helper_skb_set_protocol(struct sk_buff *skb, __be16 protocol)
{
	skb->protocol = protocol;
}

struct skb_shared_hwtstamps *ksys_helper_skb_hwtstamps(struct sk_buff *skb)
{
	return skb_hwtstamps(skb);
}

struct skb_shared_info *ksys_helper_skb_shinfo(const struct sk_buff *skb)
{
	return skb_shinfo(skb);
}

bool ksys_helper_skb_cloned(const struct sk_buff *skb)
{
	return skb_cloned(skb);
}

int ksys_helper_skb_tcp_all_headers(const struct sk_buff *skb)
{
	return skb_tcp_all_headers(skb);
}

int ksys_helper_skb_transport_offset(const struct sk_buff *skb)
{
	return skb_transport_offset(skb);
}

void ksys_helper_skb_tx_timestamp(struct sk_buff *skb)
{
	skb_tx_timestamp(skb);
}

u16 ksys_helper_skb_vlan_tag_get(const struct sk_buff *skb)
{
	return skb_vlan_tag_get(skb);
}

bool ksys_helper_skb_vlan_tag_present(const struct sk_buff *skb)
{
	return skb_vlan_tag_present(skb);
}

/* <asm/barrier.h>, <net/netdev_queues.h> */

void ksys_helper_smp_mb__after_atomic(void)
{
	smp_mb__after_atomic();
}

/* kapi::barrier (drivers/kapi/barrier.rs): ordering against a device */
void ksys_helper_dma_wmb(void)
{
	dma_wmb();
}

void ksys_helper_dma_rmb(void)
{
	dma_rmb();
}

void ksys_helper_wmb(void)
{
	wmb();
}

void ksys_helper_netdev_txq_completed_mb(struct netdev_queue *txq, unsigned int pkts,
					 unsigned int bytes)
{
	netdev_txq_completed_mb(txq, pkts, bytes);
}

/* <net/page_pool/helpers.h> */

struct page *ksys_helper_page_pool_dev_alloc_pages(struct page_pool *pool)
{
	return page_pool_dev_alloc_pages(pool);
}

void ksys_helper_page_pool_dma_sync_for_cpu(const struct page_pool *pool,
					    const struct page *page, u32 offset,
					    u32 dma_sync_size)
{
	page_pool_dma_sync_for_cpu(pool, page, offset, dma_sync_size);
}

dma_addr_t ksys_helper_page_pool_get_dma_addr(const struct page *page)
{
	return page_pool_get_dma_addr(page);
}

/*
 * The page pool has no exported call for this (its own sync for the device runs when a page
 * is recycled): a driver that posts a page again without recycling it syncs it itself.
 */
void ksys_helper_page_pool_dma_sync_for_device(const struct page_pool *pool,
					       const struct page *page, u32 offset,
					       u32 dma_sync_size)
{
	dma_sync_single_range_for_device(pool->p.dev, page_pool_get_dma_addr(page), offset,
					 dma_sync_size, page_pool_get_dma_dir(pool));
}

void ksys_helper_page_pool_put_full_page(struct page_pool *pool, struct page *page,
					 bool allow_direct)
{
	page_pool_put_full_page(pool, page, allow_direct);
}

/* <linux/netdevice.h> */

void ksys_helper_netdev_disable_netpoll(struct net_device *dev)
{
	dev->priv_flags |= IFF_DISABLE_NETPOLL;
}

/* <linux/ratelimit.h> */

/* The printk defaults (DEFAULT_RATELIMIT_INTERVAL, _BURST): 10 messages per 5 s. */
void ksys_helper_ratelimit_init(struct ratelimit_state *rs)
{
	ratelimit_state_init(rs, DEFAULT_RATELIMIT_INTERVAL, DEFAULT_RATELIMIT_BURST);
}

/* <net/xdp.h>, <trace/events/xdp.h> */

void ksys_helper_xdp_init_buff(struct xdp_buff *xdp, u32 frame_sz, struct xdp_rxq_info *rxq)
{
	xdp_init_buff(xdp, frame_sz, rxq);
}

void ksys_helper_xdp_prepare_buff(struct xdp_buff *xdp, unsigned char *hard_start, int headroom,
				  int data_len, bool meta_valid)
{
	xdp_prepare_buff(xdp, hard_start, headroom, data_len, meta_valid);
}

u32 ksys_helper_bpf_prog_run_xdp(const struct bpf_prog *prog, struct xdp_buff *xdp)
{
	return bpf_prog_run_xdp(prog, xdp);
}

void ksys_helper_trace_xdp_exception(const struct net_device *dev, const struct bpf_prog *xdp,
				     u32 act)
{
	trace_xdp_exception(dev, xdp, act);
}

/* <net/xdp_sock_drv.h> */

u32 ksys_helper_xsk_pool_get_headroom(struct xsk_buff_pool *pool)
{
	return xsk_pool_get_headroom(pool);
}

u32 ksys_helper_xsk_pool_get_chunk_size(struct xsk_buff_pool *pool)
{
	return xsk_pool_get_chunk_size(pool);
}

u32 ksys_helper_xsk_pool_get_rx_frame_size(struct xsk_buff_pool *pool)
{
	return xsk_pool_get_rx_frame_size(pool);
}

void ksys_helper_xsk_pool_set_rxq_info(struct xsk_buff_pool *pool, struct xdp_rxq_info *rxq)
{
	xsk_pool_set_rxq_info(pool, rxq);
}

/* mlx5e's attributes (en/xsk/pool.c `mlx5e_xsk_map_pool`). */
int ksys_helper_xsk_pool_dma_map(struct xsk_buff_pool *pool, struct device *dev)
{
	return xsk_pool_dma_map(pool, dev, DMA_ATTR_SKIP_CPU_SYNC);
}

void ksys_helper_xsk_pool_dma_unmap(struct xsk_buff_pool *pool)
{
	xsk_pool_dma_unmap(pool, DMA_ATTR_SKIP_CPU_SYNC);
}

struct xdp_buff *ksys_helper_xsk_buff_alloc(struct xsk_buff_pool *pool)
{
	return xsk_buff_alloc(pool);
}

dma_addr_t ksys_helper_xsk_buff_xdp_get_dma(struct xdp_buff *xdp)
{
	return xsk_buff_xdp_get_dma(xdp);
}

void ksys_helper_xsk_buff_set_size(struct xdp_buff *xdp, u32 size)
{
	xsk_buff_set_size(xdp, size);
}

void ksys_helper_xsk_buff_dma_sync_for_cpu(struct xdp_buff *xdp)
{
	xsk_buff_dma_sync_for_cpu(xdp);
}

void ksys_helper_xsk_buff_free(struct xdp_buff *xdp)
{
	xsk_buff_free(xdp);
}

dma_addr_t ksys_helper_xsk_buff_raw_get_dma(struct xsk_buff_pool *pool, u64 addr)
{
	return xsk_buff_raw_get_dma(pool, addr);
}

void *ksys_helper_xsk_buff_raw_get_data(struct xsk_buff_pool *pool, u64 addr)
{
	return xsk_buff_raw_get_data(pool, addr);
}

void ksys_helper_xsk_buff_raw_dma_sync_for_device(struct xsk_buff_pool *pool, dma_addr_t dma,
						  size_t size)
{
	xsk_buff_raw_dma_sync_for_device(pool, dma, size);
}

/* <linux/dim.h> */

/* A zeroed DIM state (DIM_START_MEASURE) whose decisions run `fn`, in CQ period `mode`. */
void ksys_helper_dim_init(struct dim *dim, work_func_t fn, u8 mode)
{
	memset(dim, 0, sizeof(*dim));
	INIT_WORK(&dim->work, fn);
	dim->mode = mode;
}

/* One sample of a queue's counters (from its NAPI poll); may schedule the work. */
void ksys_helper_dim_sample(struct dim *dim, u16 events, u64 packets, u64 bytes)
{
	struct dim_sample s = {};

	dim_update_sample(events, packets, bytes, &s);
	net_dim(dim, &s);
}

struct dim *ksys_helper_dim_of_work(struct work_struct *work)
{
	return container_of(work, struct dim, work);
}

/* The moderation of the profile the algorithm chose. */
struct dim_cq_moder ksys_helper_dim_moderation(const struct dim *dim, bool tx)
{
	return tx ? net_dim_get_tx_moderation(dim->mode, dim->profile_ix) :
		    net_dim_get_rx_moderation(dim->mode, dim->profile_ix);
}

/* The chosen profile is applied: measure again (the work's last step). */
void ksys_helper_dim_measure_again(struct dim *dim)
{
	WRITE_ONCE(dim->state, DIM_START_MEASURE);
}

void ksys_helper_dim_cancel(struct dim *dim)
{
	cancel_work_sync(&dim->work);
}

/* <net/udp_tunnel.h> */

void ksys_helper_udp_tunnel_nic_reset_ntf(struct net_device *dev)
{
	udp_tunnel_nic_reset_ntf(dev);
}

/* <rdma/ib_verbs.h> */

pgprot_t ksys_helper_ib_vma_prot_noncached(const struct vm_area_struct *vma)
{
	return pgprot_noncached(vma->vm_page_prot);
}

struct ib_device *ksys_helper_ib_cq_device(const struct ib_cq *cq)
{
	return cq->device;
}

void ksys_helper_ib_cq_set_cqe(struct ib_cq *cq, int cqe)
{
	cq->cqe = cqe;
}

void ksys_helper_ib_cq_comp(struct ib_cq *cq)
{
	if (cq->comp_handler)
		cq->comp_handler(cq, cq->cq_context);
}

void ksys_helper_ib_cq_event(struct ib_cq *cq, enum ib_event_type type)
{
	struct ib_event ev = { .device = cq->device, .element.cq = cq, .event = type };

	if (cq->event_handler)
		cq->event_handler(&ev, cq->cq_context);
}

struct ib_device *ksys_helper_ib_qp_device(const struct ib_qp *qp)
{
	return qp->device;
}

struct ib_pd *ksys_helper_ib_qp_pd(const struct ib_qp *qp)
{
	return qp->pd;
}

void ksys_helper_ib_qp_set_num(struct ib_qp *qp, u32 qpn)
{
	qp->qp_num = qpn;
}

u32 ksys_helper_ib_qp_num(const struct ib_qp *qp)
{
	return qp->qp_num;
}

enum ib_qp_type ksys_helper_ib_qp_type(const struct ib_qp *qp)
{
	return qp->qp_type;
}

bool ksys_helper_ib_qp_is_user(const struct ib_qp *qp)
{
	return qp->uobject != NULL;
}

void ksys_helper_ib_qp_event(struct ib_qp *qp, enum ib_event_type type)
{
	struct ib_event ev = { .device = qp->device, .element.qp = qp, .event = type };

	if (qp->event_handler)
		qp->event_handler(&ev, qp->qp_context);
}

void ksys_helper_ib_mr_set_keys(struct ib_mr *mr, u32 lkey, u32 rkey)
{
	mr->lkey = lkey;
	mr->rkey = rkey;
}

u64 ksys_helper_ib_mr_iova(const struct ib_mr *mr)
{
	return mr->iova;
}

u64 ksys_helper_ib_mr_length(const struct ib_mr *mr)
{
	return mr->length;
}

u32 ksys_helper_ib_mr_page_size(const struct ib_mr *mr)
{
	return mr->page_size;
}

/* What a new MR from rereg_user_mr covers (uverbs sets it for reg_user_mr, not for rereg). */
void ksys_helper_ib_mr_set_range(struct ib_mr *mr, u64 iova, u64 length)
{
	mr->iova = iova;
	mr->length = length;
}

struct ib_device *ksys_helper_ib_ah_device(const struct ib_ah *ah)
{
	return ah->device;
}

struct ib_device *ksys_helper_ib_mw_device(const struct ib_mw *mw)
{
	return mw->device;
}

struct ib_pd *ksys_helper_ib_mw_pd(const struct ib_mw *mw)
{
	return mw->pd;
}

bool ksys_helper_ib_mw_type_2(const struct ib_mw *mw)
{
	return mw->type == IB_MW_TYPE_2;
}

void ksys_helper_ib_mw_set_rkey(struct ib_mw *mw, u32 rkey)
{
	mw->rkey = rkey;
}

struct ib_device *ksys_helper_ib_srq_device(const struct ib_srq *srq)
{
	return srq->device;
}

struct ib_pd *ksys_helper_ib_srq_pd(const struct ib_srq *srq)
{
	return srq->pd;
}

void ksys_helper_ib_srq_event(struct ib_srq *srq, enum ib_event_type type)
{
	struct ib_event ev = { .device = srq->device, .element.srq = srq, .event = type };

	if (srq->event_handler)
		srq->event_handler(&ev, srq->srq_context);
}

void ksys_helper_ib_wq_init_attr(const struct ib_wq_init_attr *attr, u32 *wq_type, u32 *max_wr,
				 u32 *max_sge, struct ib_cq **cq, u32 *create_flags)
{
	*wq_type = attr->wq_type;
	*max_wr = attr->max_wr;
	*max_sge = attr->max_sge;
	*cq = attr->cq;
	*create_flags = attr->create_flags;
}

void ksys_helper_ib_wq_attr(const struct ib_wq_attr *attr, u32 *wq_state, u32 *curr_wq_state,
			    u32 *flags, u32 *flags_mask)
{
	*wq_state = attr->wq_state;
	*curr_wq_state = attr->curr_wq_state;
	*flags = attr->flags;
	*flags_mask = attr->flags_mask;
}

void ksys_helper_ib_wq_set_num(struct ib_wq *wq, u32 wqn)
{
	wq->wq_num = wqn;
}

struct ib_device *ksys_helper_ib_rwq_ind_table_device(const struct ib_rwq_ind_table *t)
{
	return t->device;
}

void ksys_helper_ib_rwq_ind_table_set_num(struct ib_rwq_ind_table *t, u32 num)
{
	t->ind_tbl_num = num;
}

struct ib_wq **ksys_helper_ib_rwq_ind_table_init_attr(const struct ib_rwq_ind_table_init_attr *a,
						      u32 *log_size)
{
	*log_size = a->log_ind_tbl_size;
	return a->ind_tbl;
}

void ksys_helper_ib_flow_attr(const struct ib_flow_attr *attr, u32 *type, u16 *priority,
			      u32 *flags, u8 *num_of_specs, u32 *port)
{
	*type = attr->type;
	*priority = attr->priority;
	*flags = attr->flags;
	*num_of_specs = attr->num_of_specs;
	*port = attr->port;
}

#define KSYS_COPY_FILTER(out, spec)                                                   \
	do {                                                                          \
		BUILD_BUG_ON(sizeof((spec).val) > sizeof((out)->val));                \
		memcpy((out)->val, &(spec).val, sizeof((spec).val));                  \
		memcpy((out)->mask, &(spec).mask, sizeof((spec).mask));               \
	} while (0)

int ksys_helper_ib_flow_spec(const struct ib_flow_attr *attr, u32 i,
			     struct ksys_ib_flow_spec *out)
{
	const u8 *p = (const u8 *)(attr + 1);
	const union ib_flow_spec *s;
	u32 j;

	/* uverbs checked that the specs' sizes add up to within the attributes' size. */
	if (i >= attr->num_of_specs)
		return -EINVAL;
	for (j = 0; j < i; j++)
		p += ((const union ib_flow_spec *)p)->size;
	s = (const union ib_flow_spec *)p;
	memset(out, 0, sizeof(*out));
	out->type = s->type;
	out->size = s->size;
	switch (s->type) {
	case IB_FLOW_SPEC_ETH:
		KSYS_COPY_FILTER(out, s->eth);
		break;
	case IB_FLOW_SPEC_IPV4:
		KSYS_COPY_FILTER(out, s->ipv4);
		break;
	case IB_FLOW_SPEC_IPV6:
		KSYS_COPY_FILTER(out, s->ipv6);
		break;
	case IB_FLOW_SPEC_TCP:
	case IB_FLOW_SPEC_UDP:
		KSYS_COPY_FILTER(out, s->tcp_udp);
		break;
	case IB_FLOW_SPEC_ACTION_TAG:
		out->tag = s->flow_tag.tag_id;
		break;
	default:
		break;
	}
	return 0;
}

/* <rdma/uverbs_ioctl.h> */

struct ib_ucontext *ksys_helper_ib_udata_ucontext(struct ib_udata *udata)
{
	return udata ? rdma_udata_to_uverbs_attr_bundle(udata)->context : NULL;
}

struct ib_udata *ksys_helper_ib_attrs_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}

/* <rdma/ib_umem.h>, <rdma/iter.h> */

struct ib_umem *ksys_helper_ib_umem_get_va(struct ib_device *device, unsigned long addr,
					   size_t size, int access)
{
	return ib_umem_get_va(device, addr, size, access);
}

/*
 * A pinned dma-buf umem as its embedded ib_umem (which ib_umem_release takes back), with the
 * I/O virtual address its blocks are counted from set as ib_umem_find_best_pgsz() sets it.
 */
struct ib_umem *ksys_helper_ib_umem_dmabuf_get_pinned(struct ib_device *device,
						      unsigned long offset, size_t size,
						      int fd, int access, u64 iova)
{
	struct ib_umem_dmabuf *d = ib_umem_dmabuf_get_pinned(device, offset, size, fd, access);

	if (IS_ERR(d))
		return ERR_CAST(d);
	d->umem.iova = iova;
	return &d->umem;
}

dma_addr_t ksys_helper_ib_umem_start_dma_addr(struct ib_umem *umem)
{
	return ib_umem_start_dma_addr(umem);
}

size_t ksys_helper_ib_umem_num_dma_blocks(struct ib_umem *umem, unsigned long pgsz)
{
	return ib_umem_num_dma_blocks(umem, pgsz);
}

void ksys_helper_rdma_umem_block_iter_start(struct ib_block_iter *biter, struct ib_umem *umem,
					    unsigned long pgsz)
{
	__rdma_umem_block_iter_start(biter, umem, pgsz);
}

bool ksys_helper_rdma_umem_block_iter_next(struct ib_block_iter *biter)
{
	return __rdma_umem_block_iter_next(biter);
}

dma_addr_t ksys_helper_rdma_block_iter_dma_address(struct ib_block_iter *biter)
{
	return rdma_block_iter_dma_address(biter);
}

/* <linux/ptp_clock_kernel.h> */

void ksys_helper_ptp_read_system_prets(struct ptp_system_timestamp *sts)
{
	ptp_read_system_prets(sts);
}

void ksys_helper_ptp_read_system_postts(struct ptp_system_timestamp *sts)
{
	ptp_read_system_postts(sts);
}
