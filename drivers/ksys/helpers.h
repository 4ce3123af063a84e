/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Prototypes of the C shims in helpers.c. bindgen reads them through bindings_helper.h and
 * ksys.mk renames each `ksys_helper_NAME` to `NAME` (with `#[link_name]`), as the kernel does
 * for its `rust_helper_*` functions, so Rust calls `ksys::NAME` whether NAME is a real
 * function or a static inline.
 */
#ifndef KSYS_HELPERS_H
#define KSYS_HELPERS_H

#include <linux/dim.h>
#include <linux/ratelimit.h>
#include <linux/dma-mapping.h>
#include <linux/etherdevice.h>
#include <linux/netdevice.h>
#include <linux/ptp_clock_kernel.h>
#include <linux/skbuff.h>
#include <linux/tcp.h>
#include <net/devlink.h>
#include <net/netdev_queues.h>
#include <net/page_pool/helpers.h>
#include <net/udp_tunnel.h>
#include <net/xdp.h>
#include <net/xdp_sock_drv.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/iter.h>
#include <rdma/uverbs_ioctl.h>

struct devlink *ksys_helper_devlink_alloc(const struct devlink_ops *ops, size_t priv_size,
					  struct device *dev);

/* <linux/dma-mapping.h> */
dma_addr_t ksys_helper_dma_map_single(struct device *dev, void *ptr, size_t size,
				      enum dma_data_direction dir);
int ksys_helper_dma_mapping_error(struct device *dev, dma_addr_t addr);
void ksys_helper_dma_unmap_page(struct device *dev, dma_addr_t addr, size_t size,
				enum dma_data_direction dir);
void ksys_helper_dma_unmap_single(struct device *dev, dma_addr_t addr, size_t size,
				  enum dma_data_direction dir);

/* <linux/etherdevice.h> */
void ksys_helper_eth_hw_addr_set(struct net_device *dev, const u8 *addr);
bool ksys_helper_is_valid_ether_addr(const u8 *addr);

/* <linux/mm.h> */
void *ksys_helper_page_address(const struct page *page);

/* <linux/netdevice.h> */
bool ksys_helper___netdev_tx_sent_queue(struct netdev_queue *txq, unsigned int bytes,
					bool xmit_more);
void ksys_helper_dev_kfree_skb_any(struct sk_buff *skb);
gro_result_t ksys_helper_napi_gro_receive(struct napi_struct *napi, struct sk_buff *skb);
bool ksys_helper_napi_schedule(struct napi_struct *napi);
struct netdev_queue *ksys_helper_netdev_get_tx_queue(const struct net_device *dev,
						     unsigned int index);
void *ksys_helper_netdev_priv(const struct net_device *dev);
void ksys_helper_netdev_tx_completed_queue(struct netdev_queue *txq, unsigned int pkts,
					   unsigned int bytes);
void ksys_helper_netdev_tx_reset_queue(struct netdev_queue *txq);
bool ksys_helper_netdev_xmit_more(void);
bool ksys_helper_netif_carrier_ok(const struct net_device *dev);
void ksys_helper_netif_napi_add(struct net_device *dev, struct napi_struct *napi,
				int (*poll)(struct napi_struct *, int));
void ksys_helper_netif_napi_add_config(struct net_device *dev, struct napi_struct *napi,
				       int (*poll)(struct napi_struct *, int), int index);
void ksys_helper_netif_napi_del(struct napi_struct *napi);
void ksys_helper_netif_napi_set_irq(struct napi_struct *napi, int irq);
bool ksys_helper_netif_running(const struct net_device *dev);
void ksys_helper_netif_tx_start_queue(struct netdev_queue *txq);
bool ksys_helper_netif_tx_queue_stopped(const struct netdev_queue *txq);
void ksys_helper_netif_tx_stop_queue(struct netdev_queue *txq);
void ksys_helper_set_netdev_dev(struct net_device *net, struct device *pdev);

/* <linux/skbuff.h>, <linux/tcp.h>, <linux/if_vlan.h> */
void ksys_helper___vlan_hwaccel_put_tag(struct sk_buff *skb, __be16 proto, u16 tci);
void ksys_helper_skb_add_rx_frag(struct sk_buff *skb, int i, struct page *page, int off,
				 int size, unsigned int truesize);
int ksys_helper_skb_checksum_start_offset(const struct sk_buff *skb);
u16 ksys_helper_skb_csum_offset(const struct sk_buff *skb);
bool ksys_helper_skb_encapsulation(const struct sk_buff *skb);
u8 ksys_helper_skb_ip_summed(const struct sk_buff *skb);
__be16 ksys_helper_skb_protocol(const struct sk_buff *skb);
dma_addr_t ksys_helper_skb_frag_dma_map(struct device *dev, const skb_frag_t *frag);
unsigned int ksys_helper_skb_frag_size(const skb_frag_t *frag);
u16 ksys_helper_skb_get_queue_mapping(const struct sk_buff *skb);
unsigned int ksys_helper_skb_headlen(const struct sk_buff *skb);
int ksys_helper_skb_inner_network_offset(const struct sk_buff *skb);
int ksys_helper_skb_inner_tcp_all_headers(const struct sk_buff *skb);
int ksys_helper_skb_inner_transport_offset(const struct sk_buff *skb);
bool ksys_helper_skb_is_gso(const struct sk_buff *skb);
void ksys_helper_skb_mark_for_recycle(struct sk_buff *skb);
int ksys_helper_skb_network_offset(const struct sk_buff *skb);
void ksys_helper_skb_record_rx_queue(struct sk_buff *skb, u16 rx_queue);
void ksys_helper_skb_reserve(struct sk_buff *skb, int len);
void ksys_helper_skb_set_csum(struct sk_buff *skb, __wsum csum);
void ksys_helper_skb_set_csum_level(struct sk_buff *skb, u8 level);
void ksys_helper_skb_set_ip_summed(struct sk_buff *skb, u8 ip_summed);
void ksys_helper_skb_set_protocol(struct sk_buff *skb, __be16 protocol);
void ksys_helper_skb_set_hash(struct sk_buff *skb, __u32 hash, enum pkt_hash_types type);
struct skb_shared_info *ksys_helper_skb_shinfo(const struct sk_buff *skb);
struct skb_shared_hwtstamps *ksys_helper_skb_hwtstamps(struct sk_buff *skb);
bool ksys_helper_skb_cloned(const struct sk_buff *skb);
int ksys_helper_skb_tcp_all_headers(const struct sk_buff *skb);
int ksys_helper_skb_transport_offset(const struct sk_buff *skb);
void ksys_helper_skb_tx_timestamp(struct sk_buff *skb);
u16 ksys_helper_skb_vlan_tag_get(const struct sk_buff *skb);
bool ksys_helper_skb_vlan_tag_present(const struct sk_buff *skb);

/* <asm/barrier.h>, <net/netdev_queues.h> (the barriers of netif_txq_maybe_stop() and
 * netif_txq_completed_wake(), which are macros over a caller's expression) */
void ksys_helper_smp_mb__after_atomic(void);
/* kapi::barrier (drivers/kapi/barrier.rs) */
void ksys_helper_dma_wmb(void);
void ksys_helper_dma_rmb(void);
void ksys_helper_wmb(void);
void ksys_helper_netdev_txq_completed_mb(struct netdev_queue *txq, unsigned int pkts,
					 unsigned int bytes);

/* <net/page_pool/helpers.h> */
struct page *ksys_helper_page_pool_dev_alloc_pages(struct page_pool *pool);
void ksys_helper_page_pool_dma_sync_for_cpu(const struct page_pool *pool,
					    const struct page *page, u32 offset,
					    u32 dma_sync_size);
dma_addr_t ksys_helper_page_pool_get_dma_addr(const struct page *page);
void ksys_helper_page_pool_dma_sync_for_device(const struct page_pool *pool,
					       const struct page *page, u32 offset,
					       u32 dma_sync_size);
void ksys_helper_page_pool_put_full_page(struct page_pool *pool, struct page *page,
					 bool allow_direct);

/* <linux/netdevice.h>: `priv_flags` is a bitfield */
void ksys_helper_netdev_disable_netpoll(struct net_device *dev);

/* <linux/ratelimit.h> (ratelimit_state_init() is a static inline) */
void ksys_helper_ratelimit_init(struct ratelimit_state *rs);

/* <net/xdp.h>, <trace/events/xdp.h> */
void ksys_helper_xdp_init_buff(struct xdp_buff *xdp, u32 frame_sz, struct xdp_rxq_info *rxq);
void ksys_helper_xdp_prepare_buff(struct xdp_buff *xdp, unsigned char *hard_start, int headroom,
				  int data_len, bool meta_valid);
u32 ksys_helper_bpf_prog_run_xdp(const struct bpf_prog *prog, struct xdp_buff *xdp);
void ksys_helper_trace_xdp_exception(const struct net_device *dev, const struct bpf_prog *xdp,
				     u32 act);

/* <net/xdp_sock_drv.h> (the pool's and its buffers' static inlines) */
u32 ksys_helper_xsk_pool_get_headroom(struct xsk_buff_pool *pool);
u32 ksys_helper_xsk_pool_get_chunk_size(struct xsk_buff_pool *pool);
u32 ksys_helper_xsk_pool_get_rx_frame_size(struct xsk_buff_pool *pool);
void ksys_helper_xsk_pool_set_rxq_info(struct xsk_buff_pool *pool, struct xdp_rxq_info *rxq);
int ksys_helper_xsk_pool_dma_map(struct xsk_buff_pool *pool, struct device *dev);
void ksys_helper_xsk_pool_dma_unmap(struct xsk_buff_pool *pool);
struct xdp_buff *ksys_helper_xsk_buff_alloc(struct xsk_buff_pool *pool);
dma_addr_t ksys_helper_xsk_buff_xdp_get_dma(struct xdp_buff *xdp);
void ksys_helper_xsk_buff_set_size(struct xdp_buff *xdp, u32 size);
void ksys_helper_xsk_buff_dma_sync_for_cpu(struct xdp_buff *xdp);
void ksys_helper_xsk_buff_free(struct xdp_buff *xdp);
dma_addr_t ksys_helper_xsk_buff_raw_get_dma(struct xsk_buff_pool *pool, u64 addr);
void *ksys_helper_xsk_buff_raw_get_data(struct xsk_buff_pool *pool, u64 addr);
void ksys_helper_xsk_buff_raw_dma_sync_for_device(struct xsk_buff_pool *pool, dma_addr_t dma,
						  size_t size);

/* <linux/dim.h> (INIT_WORK and dim_update_sample() are a macro and a static inline) */
void ksys_helper_dim_init(struct dim *dim, work_func_t fn, u8 mode);
void ksys_helper_dim_sample(struct dim *dim, u16 events, u64 packets, u64 bytes);
struct dim *ksys_helper_dim_of_work(struct work_struct *work);
struct dim_cq_moder ksys_helper_dim_moderation(const struct dim *dim, bool tx);
void ksys_helper_dim_measure_again(struct dim *dim);
void ksys_helper_dim_cancel(struct dim *dim);

/* <net/udp_tunnel.h> */
void ksys_helper_udp_tunnel_nic_reset_ntf(struct net_device *dev);

/* <rdma/ib_verbs.h>, <linux/mm.h>: the protection of an uncached I/O mapping of `vma`. */
pgprot_t ksys_helper_ib_vma_prot_noncached(const struct vm_area_struct *vma);

/* <rdma/ib_verbs.h>: the fields of the core-allocated objects the layer reads or sets (the
 * structs stay opaque to Rust: the core owns them), and the objects' event callbacks. */
struct ib_device *ksys_helper_ib_cq_device(const struct ib_cq *cq);
void ksys_helper_ib_cq_set_cqe(struct ib_cq *cq, int cqe);
void ksys_helper_ib_cq_comp(struct ib_cq *cq);
void ksys_helper_ib_cq_event(struct ib_cq *cq, enum ib_event_type type);
struct ib_device *ksys_helper_ib_qp_device(const struct ib_qp *qp);
struct ib_pd *ksys_helper_ib_qp_pd(const struct ib_qp *qp);
void ksys_helper_ib_qp_set_num(struct ib_qp *qp, u32 qpn);
u32 ksys_helper_ib_qp_num(const struct ib_qp *qp);
enum ib_qp_type ksys_helper_ib_qp_type(const struct ib_qp *qp);
bool ksys_helper_ib_qp_is_user(const struct ib_qp *qp);
void ksys_helper_ib_qp_event(struct ib_qp *qp, enum ib_event_type type);
void ksys_helper_ib_mr_set_keys(struct ib_mr *mr, u32 lkey, u32 rkey);
u64 ksys_helper_ib_mr_iova(const struct ib_mr *mr);
u64 ksys_helper_ib_mr_length(const struct ib_mr *mr);
u32 ksys_helper_ib_mr_page_size(const struct ib_mr *mr);
void ksys_helper_ib_mr_set_range(struct ib_mr *mr, u64 iova, u64 length);
struct ib_device *ksys_helper_ib_ah_device(const struct ib_ah *ah);
struct ib_device *ksys_helper_ib_mw_device(const struct ib_mw *mw);
struct ib_pd *ksys_helper_ib_mw_pd(const struct ib_mw *mw);
bool ksys_helper_ib_mw_type_2(const struct ib_mw *mw);
void ksys_helper_ib_mw_set_rkey(struct ib_mw *mw, u32 rkey);
struct ib_device *ksys_helper_ib_srq_device(const struct ib_srq *srq);
struct ib_pd *ksys_helper_ib_srq_pd(const struct ib_srq *srq);
void ksys_helper_ib_srq_event(struct ib_srq *srq, enum ib_event_type type);

/*
 * A steering rule's attributes (`struct ib_flow_attr`, specs packed behind it as uverbs
 * converted them) and one spec of it as plain bytes: the filter value and mask structs
 * (`struct ib_flow_eth_filter`, `_ipv4_`, `_ipv6_`, `_tcp_udp_`, copied as laid out) or the
 * flow tag.
 */
struct ksys_ib_flow_spec {
	u32 type;
	u16 size;
	u8 val[40];
	u8 mask[40];
	u32 tag;
};

/* Work queues (`ibv_create_wq`) and their indirection tables (RSS QPs). */
void ksys_helper_ib_wq_init_attr(const struct ib_wq_init_attr *attr, u32 *wq_type, u32 *max_wr,
				 u32 *max_sge, struct ib_cq **cq, u32 *create_flags);
void ksys_helper_ib_wq_attr(const struct ib_wq_attr *attr, u32 *wq_state, u32 *curr_wq_state,
			    u32 *flags, u32 *flags_mask);
void ksys_helper_ib_wq_set_num(struct ib_wq *wq, u32 wqn);
struct ib_device *ksys_helper_ib_rwq_ind_table_device(const struct ib_rwq_ind_table *t);
void ksys_helper_ib_rwq_ind_table_set_num(struct ib_rwq_ind_table *t, u32 num);
struct ib_wq **ksys_helper_ib_rwq_ind_table_init_attr(const struct ib_rwq_ind_table_init_attr *a,
						      u32 *log_size);

void ksys_helper_ib_flow_attr(const struct ib_flow_attr *attr, u32 *type, u16 *priority,
			      u32 *flags, u8 *num_of_specs, u32 *port);
int ksys_helper_ib_flow_spec(const struct ib_flow_attr *attr, u32 i,
			     struct ksys_ib_flow_spec *out);

/* <rdma/uverbs_ioctl.h>: rdma_udata_to_drv_context(); the driver udata of a bundle. */
struct ib_ucontext *ksys_helper_ib_udata_ucontext(struct ib_udata *udata);
struct ib_udata *ksys_helper_ib_attrs_udata(struct uverbs_attr_bundle *attrs);

/* <rdma/ib_umem.h>, <rdma/iter.h> */
struct ib_umem *ksys_helper_ib_umem_get_va(struct ib_device *device, unsigned long addr,
					   size_t size, int access);
struct ib_umem *ksys_helper_ib_umem_dmabuf_get_pinned(struct ib_device *device,
						      unsigned long offset, size_t size,
						      int fd, int access, u64 iova);
dma_addr_t ksys_helper_ib_umem_start_dma_addr(struct ib_umem *umem);
size_t ksys_helper_ib_umem_num_dma_blocks(struct ib_umem *umem, unsigned long pgsz);
void ksys_helper_rdma_umem_block_iter_start(struct ib_block_iter *biter, struct ib_umem *umem,
					    unsigned long pgsz);
bool ksys_helper_rdma_umem_block_iter_next(struct ib_block_iter *biter);
dma_addr_t ksys_helper_rdma_block_iter_dma_address(struct ib_block_iter *biter);

/*
 * uapi.c: mlx5's UAR object (MLX5_IB_OBJECT_UAR) for `ops.driver_def`. A device of the ib
 * layer starts with `ksys_ib_dev_head`: the ib_device, then the driver's handler of
 * UAR_OBJ_ALLOC (NULL: EOPNOTSUPP), which allocates a UAR of `type` for `uctx`, inserts its
 * mmap entry into the context and returns the entry and the UAR's page index.
 */
struct ksys_ib_dev_head {
	struct ib_device ib;
	int (*uar_alloc)(struct ib_ucontext *uctx, u32 type, struct rdma_user_mmap_entry **entry,
			 u32 *page_id);
};

const struct uapi_definition *ksys_helper_mlx5_uar_defs(void);
int ksys_helper_mlx5_query_context_resp(struct uverbs_attr_bundle *attrs, const void *resp,
					size_t len);

/* <linux/ptp_clock_kernel.h> */
void ksys_helper_ptp_read_system_prets(struct ptp_system_timestamp *sts);
void ksys_helper_ptp_read_system_postts(struct ptp_system_timestamp *sts);

#endif
