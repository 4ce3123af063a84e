// SPDX-License-Identifier: GPL-2.0
/*
 * The driver-specific uverbs objects of the ib layer (drivers/ib, `ops.driver_def`), which can
 * only be declared with the C macros of <rdma/uverbs_named_ioctl.h>: mlx5's UAR object
 * (MLX5_IB_OBJECT_UAR, methods UAR_OBJ_ALLOC and UAR_OBJ_DESTROY), as mlx5_ib declares it
 * (drivers/infiniband/hw/mlx5/main.c). The attributes and the uobject's life are handled here;
 * the UAR itself and its mmap entry come from the driver through the device's
 * `ksys_ib_dev_head.uar_alloc` (drivers/ib/uapi.rs), and the entry goes back through ib_core's
 * `rdma_user_mmap_entry_remove()` (the last reference calls the driver's `mmap_free`).
 */

#include <rdma/mlx5-abi.h>
#include <rdma/mlx5_user_ioctl_cmds.h>
#include <rdma/mlx5_user_ioctl_verbs.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/uverbs_std_types.h>

#include "helpers.h"

#define UVERBS_MODULE_NAME ksys_ib
#include <rdma/uverbs_named_ioctl.h>

/* mlx5_ib's mlx5_entry_to_mmap_offset(): the entry's page offset in libmlx5's encoding. */
static u64 ksys_mlx5_entry_mmap_offset(const struct rdma_user_mmap_entry *entry)
{
	u64 cmd = (entry->start_pgoff >> 16) & 0xFFFF;
	u64 index = entry->start_pgoff & 0xFFFF;

	return (((index >> 8) << 16) | (cmd << 8) | (index & 0xFF)) << PAGE_SHIFT;
}

static int ksys_mmap_obj_cleanup(struct ib_uobject *uobject, enum rdma_remove_reason why,
				 struct uverbs_attr_bundle *attrs)
{
	rdma_user_mmap_entry_remove(uobject->object);
	return 0;
}

static int UVERBS_HANDLER(MLX5_IB_METHOD_UAR_OBJ_ALLOC)(struct uverbs_attr_bundle *attrs)
{
	struct ib_uobject *uobj =
		uverbs_attr_get_uobject(attrs, MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE);
	struct ib_ucontext *uctx = ib_uverbs_get_ucontext(attrs);
	enum mlx5_ib_uapi_uar_alloc_type alloc_type;
	struct rdma_user_mmap_entry *entry;
	struct ksys_ib_dev_head *dev;
	u32 length = PAGE_SIZE;
	u64 mmap_offset;
	u32 page_id;
	int err;

	if (IS_ERR(uctx))
		return PTR_ERR(uctx);
	err = uverbs_get_const(&alloc_type, attrs, MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE);
	if (err)
		return err;
	dev = container_of(uctx->device, struct ksys_ib_dev_head, ib);
	if (!dev->uar_alloc)
		return -EOPNOTSUPP;
	err = dev->uar_alloc(uctx, alloc_type, &entry, &page_id);
	if (err)
		return err;

	mmap_offset = ksys_mlx5_entry_mmap_offset(entry);
	uobj->object = entry;
	uverbs_finalize_uobj_create(attrs, MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE);

	err = uverbs_copy_to(attrs, MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET, &mmap_offset,
			     sizeof(mmap_offset));
	if (err)
		return err;
	err = uverbs_copy_to(attrs, MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID, &page_id, sizeof(page_id));
	if (err)
		return err;
	return uverbs_copy_to(attrs, MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH, &length,
			      sizeof(length));
}

DECLARE_UVERBS_NAMED_METHOD(
	MLX5_IB_METHOD_UAR_OBJ_ALLOC,
	UVERBS_ATTR_IDR(MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE, MLX5_IB_OBJECT_UAR,
			UVERBS_ACCESS_NEW, UA_MANDATORY),
	UVERBS_ATTR_CONST_IN(MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE, enum mlx5_ib_uapi_uar_alloc_type,
			     UA_MANDATORY),
	UVERBS_ATTR_PTR_OUT(MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID, UVERBS_ATTR_TYPE(u32),
			    UA_MANDATORY),
	UVERBS_ATTR_PTR_OUT(MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH, UVERBS_ATTR_TYPE(u32),
			    UA_MANDATORY),
	UVERBS_ATTR_PTR_OUT(MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET, UVERBS_ATTR_TYPE(u64),
			    UA_MANDATORY));

DECLARE_UVERBS_NAMED_METHOD_DESTROY(
	MLX5_IB_METHOD_UAR_OBJ_DESTROY,
	UVERBS_ATTR_IDR(MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE, MLX5_IB_OBJECT_UAR,
			UVERBS_ACCESS_DESTROY, UA_MANDATORY));

DECLARE_UVERBS_NAMED_OBJECT(MLX5_IB_OBJECT_UAR,
			    UVERBS_TYPE_ALLOC_IDR(ksys_mmap_obj_cleanup),
			    &UVERBS_METHOD(MLX5_IB_METHOD_UAR_OBJ_ALLOC),
			    &UVERBS_METHOD(MLX5_IB_METHOD_UAR_OBJ_DESTROY));

/*
 * mlx5's answer to UVERBS_METHOD_QUERY_CONTEXT (libmlx5's import of a context from a command
 * FD, which DPDK's mlx5 PMD does after opening the device): the context's
 * `struct mlx5_ib_alloc_ucontext_resp` in MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX, as mlx5_ib
 * declares it. The op (`query_ucontext`) hands the driver's response to
 * ksys_helper_mlx5_query_context_resp().
 */
ADD_UVERBS_ATTRIBUTES_SIMPLE(
	ksys_mlx5_query_context,
	UVERBS_OBJECT_DEVICE,
	UVERBS_METHOD_QUERY_CONTEXT,
	UVERBS_ATTR_PTR_OUT(
		MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX,
		UVERBS_ATTR_STRUCT(struct mlx5_ib_alloc_ucontext_resp, dump_fill_mkey),
		UA_MANDATORY));

int ksys_helper_mlx5_query_context_resp(struct uverbs_attr_bundle *attrs, const void *resp,
					size_t len)
{
	struct mlx5_ib_alloc_ucontext_resp r = {};

	memcpy(&r, resp, min(len, sizeof(r)));
	/* mlx5_ib_query_ucontext(): as much as the library has room for. */
	r.response_length = min_t(size_t,
				  uverbs_attr_get_len(attrs, MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX),
				  sizeof(r));
	return uverbs_copy_to_struct_or_zero(attrs, MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX, &r,
					     sizeof(r));
}

static const struct uapi_definition ksys_mlx5_uar_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE_NAMED(MLX5_IB_OBJECT_UAR),
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_DEVICE, &ksys_mlx5_query_context),
	{}
};

const struct uapi_definition *ksys_helper_mlx5_uar_defs(void)
{
	return ksys_mlx5_uar_defs;
}
