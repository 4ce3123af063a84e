/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The headers of the kernel C APIs that the 7.2 `kernel` crate does not bind, and that the
 * cx4 abstractions (drivers/devlink/, later netdev, NAPI, skb, ib_core, dmaengine) wrap.
 *
 * Only what `bindgen_parameters` allowlists is generated; every type those items refer to and
 * that is not allowlisted is taken from `kernel::bindings` (see ksys.rs). Add a header here,
 * its functions and types to `bindgen_parameters`, and its static inlines to helpers.c.
 */

#include <linux/dim.h>
#include <linux/dma-mapping.h>
#include <linux/dmaengine.h>
#include <linux/etherdevice.h>
#include <linux/ethtool.h>
#include <linux/net_tstamp.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/ptp_clock_kernel.h>
#include <linux/skbuff.h>
#include <net/dcbnl.h>
#include <net/devlink.h>
#include <net/netdev_queues.h>
#include <net/page_pool/helpers.h>
#include <net/udp_tunnel.h>
#include <net/xdp.h>
#include <net/xdp_sock_drv.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/mlx5_user_ioctl_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "helpers.h"

/*
 * Constants that bindgen cannot evaluate (macros over BIT() and friends), as the kernel's own
 * RUST_CONST_HELPER_* do: each `KSYS_CONST_NAME` is NAME's value.
 */
const unsigned int KSYS_CONST_PP_FLAG_DMA_MAP = PP_FLAG_DMA_MAP;
const unsigned int KSYS_CONST_PP_FLAG_DMA_SYNC_DEV = PP_FLAG_DMA_SYNC_DEV;
const unsigned int KSYS_CONST_XDP_PACKET_HEADROOM = XDP_PACKET_HEADROOM;
const unsigned int KSYS_CONST_NETDEV_XDP_ACT_BASIC = NETDEV_XDP_ACT_BASIC;
const unsigned int KSYS_CONST_NETDEV_XDP_ACT_REDIRECT = NETDEV_XDP_ACT_REDIRECT;
const unsigned int KSYS_CONST_NETDEV_XDP_ACT_XSK_ZEROCOPY = NETDEV_XDP_ACT_XSK_ZEROCOPY;
const unsigned int KSYS_CONST_XDP_WAKEUP_RX = XDP_WAKEUP_RX;
const unsigned int KSYS_CONST_XDP_WAKEUP_TX = XDP_WAKEUP_TX;
const u8 KSYS_CONST_ETH_RSS_HASH_TOP = ETH_RSS_HASH_TOP;
const unsigned int KSYS_CONST_ETHTOOL_COALESCE_USECS_MAX_FRAMES =
	ETHTOOL_COALESCE_USECS | ETHTOOL_COALESCE_MAX_FRAMES;
const unsigned int KSYS_CONST_ETHTOOL_COALESCE_USE_ADAPTIVE = ETHTOOL_COALESCE_USE_ADAPTIVE;
const u8 KSYS_CONST_ETH_RSS_HASH_NO_CHANGE = ETH_RSS_HASH_NO_CHANGE;
const int KSYS_CONST_NAPI_POLL_WEIGHT = NAPI_POLL_WEIGHT;
const unsigned int KSYS_CONST_IB_MGMT_MAD_SIZE = IB_MGMT_MAD_SIZE;
const unsigned int KSYS_CONST_RDMA_CORE_PORT_IBA_ROCE = RDMA_CORE_PORT_IBA_ROCE;
const unsigned int KSYS_CONST_RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
const unsigned int KSYS_CONST_RDMA_NODE_IB_CA = RDMA_NODE_IB_CA;
const u32 KSYS_CONST_MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF = MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF;
const u32 KSYS_CONST_MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC = MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC;
const unsigned int KSYS_CONST_IB_PORT_CM_SUP = IB_PORT_CM_SUP;
const unsigned int KSYS_CONST_SOF_TIMESTAMPING_TX_HARDWARE = SOF_TIMESTAMPING_TX_HARDWARE;
const unsigned int KSYS_CONST_SOF_TIMESTAMPING_TX_SOFTWARE = SOF_TIMESTAMPING_TX_SOFTWARE;
const unsigned int KSYS_CONST_SOF_TIMESTAMPING_RX_HARDWARE = SOF_TIMESTAMPING_RX_HARDWARE;
const unsigned int KSYS_CONST_SOF_TIMESTAMPING_RAW_HARDWARE = SOF_TIMESTAMPING_RAW_HARDWARE;
const u8 KSYS_CONST_SKBTX_HW_TSTAMP = SKBTX_HW_TSTAMP;
const u8 KSYS_CONST_SKBTX_IN_PROGRESS = SKBTX_IN_PROGRESS;
