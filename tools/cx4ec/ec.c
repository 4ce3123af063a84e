// SPDX-License-Identifier: GPL-2.0
/*
 * The ISA-L-like erasure-coding API over one calculation (qp.c): tables from a matrix,
 * encode, decode, and the w = 8 probe.
 *
 * The engine reads k input vectors back to back (vector i at vec_addr + i * len) and writes
 * its n outputs interleaved per 64-byte chunk: bytes [c*64*n + j*64, +64) of the stream are
 * bytes [c*64, +64) of output j. MLNX_OFED's libmlx5 lets the card scatter that stream over
 * the m code blocks through a "repeat block" UMR mkey, and gathers scattered inputs through
 * a KLM mkey; both mkeys need mlx5dv_create_mkey, i.e. DEVX, which this library does without
 * (Documentation/ec.md, "The user path"). So inputs are copied into the registered buffer
 * (unless the caller filled it in place, cx4ec_block) and the stream is de-interleaved here.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* libmlx5's "crazy HW formatting" for w != 8 (ec.c): the coefficient in the low nibble,
 * bit 4 set. The engine ignores the high nibble; we write what libmlx5 writes. */
#define W4_ENTRY 0x10

static int fail(char *err, size_t errlen, int r, const char *why)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", why);
	return r;
}

int cx4ec_init_tables(int k, int m, int w, const unsigned char *rows, struct cx4ec_tables *t,
		      char *err, size_t errlen)
{
	char why[128];
	int i, j;

	if (k < 1 || k > CX4EC_MAX_K) {
		snprintf(why, sizeof(why), "k = %d: the engine takes 1 to %d data blocks", k,
			 CX4EC_MAX_K);
		return fail(err, errlen, -EINVAL, why);
	}
	if (m < 1 || m > CX4EC_MAX_M) {
		snprintf(why, sizeof(why), "m = %d: the engine computes 1 to %d code blocks", m,
			 CX4EC_MAX_M);
		return fail(err, errlen, -EINVAL, why);
	}
	if (w != 1 && w != 2 && w != 4 && w != 8) {
		snprintf(why, sizeof(why), "w = %d: the engine has w = 1, 2, 4 (GF(2^4)) and 8", w);
		return fail(err, errlen, -EINVAL, why);
	}
	memset(t, 0, sizeof(*t));
	t->k = k;
	t->m = m;
	t->w = w;
	t->n = m == 3 ? 4 : m;
	for (j = 0; j < m; j++) {
		for (i = 0; i < k; i++) {
			unsigned char c = rows[j * k + i];

			if (w != 8 && c >> w) {
				snprintf(why, sizeof(why),
					 "coefficient %#x (code %d, data %d) does not fit w = %d", c,
					 j, i, w);
				return fail(err, errlen, -EINVAL, why);
			}
			t->matrix[i * t->n + j] = w == 8 ? c : (unsigned char)(W4_ENTRY | c);
		}
	}
	return 0;
}

static int check_len(struct cx4ec *ec, size_t len)
{
	if (!len || len % CX4EC_CHUNK)
		return cx4ec_fail(ec, -EINVAL, "block size %zu: must be a positive multiple of %d",
				  len, CX4EC_CHUNK);
	if (len > ec->max_block)
		return cx4ec_fail(ec, -EINVAL, "block size %zu: above the %zu this context registered",
				  len, ec->max_block);
	return 0;
}

/* Inputs into the registered buffer, unless already there. */
static void gather(struct cx4ec *ec, int k, size_t len, unsigned char **in)
{
	int i;

	for (i = 0; i < k; i++) {
		unsigned char *dst = ec->in + (size_t)i * len;

		if (in[i] == dst)
			continue;
		memcpy(dst, in[i], len);
		ec->stats.copied_in += len;
	}
}

/* The result stream, n outputs interleaved per chunk, into the first `used` outputs. */
static void scatter(struct cx4ec *ec, int used, int n, size_t len, unsigned char **out)
{
	size_t c, chunks = len / CX4EC_CHUNK;
	int j;

	for (c = 0; c < chunks; c++)
		for (j = 0; j < used; j++)
			memcpy(out[j] + c * CX4EC_CHUNK,
			       ec->out + (c * n + j) * CX4EC_CHUNK, CX4EC_CHUNK);
}

static int run(struct cx4ec *ec, size_t len, const struct cx4ec_tables *t, unsigned char **in,
	       unsigned char **out)
{
	int r = check_len(ec, len);

	if (r)
		return r;
	if (t->k < 1 || t->k > CX4EC_MAX_K || t->m < 1 || t->m > CX4EC_MAX_M)
		return cx4ec_fail(ec, -EINVAL, "tables not initialised (k %d, m %d)", t->k, t->m);
	gather(ec, t->k, len, in);
	memcpy(ec->mat, t->matrix, (size_t)t->k * t->n);
	r = cx4ec_calc(ec, t->k, t->m, t->w == 8, len);
	if (r) {
		if (t->w == 8) {
			char why[sizeof(ec->err)];

			memcpy(why, ec->err, sizeof(why));
			cx4ec_fail(ec, r, "%s (w = 8 needs a device with 8-bit matrices; "
				   "ConnectX-4 computes GF(2^4) only)", why);
		}
		return r;
	}
	scatter(ec, t->m, t->n, len, out);
	return 0;
}

int cx4ec_encode_data(struct cx4ec *ec, size_t len, const struct cx4ec_tables *t,
		      unsigned char **data, unsigned char **code)
{
	return run(ec, len, t, data, code);
}

int cx4ec_decode_data(struct cx4ec *ec, size_t len, int k, int m, int w,
		      const unsigned char *rows, const int *erasures, int nerrs,
		      unsigned char **blocks)
{
	unsigned char b[CX4EC_MAX_K * CX4EC_MAX_K], inv[CX4EC_MAX_K * CX4EC_MAX_K];
	unsigned char dec[CX4EC_MAX_M * CX4EC_MAX_K], g[CX4EC_MAX_K];
	unsigned char *in[CX4EC_MAX_K], *out[CX4EC_MAX_M];
	char erased[CX4EC_MAX_K + CX4EC_MAX_M] = { 0 }, why[128];
	struct cx4ec_tables t;
	int i, j, l, e, r, fw = gf_width(w);

	r = cx4ec_init_tables(k, m, w, rows, &t, why, sizeof(why));
	if (r)
		return cx4ec_fail(ec, r, "%s", why);
	if (nerrs < 1 || nerrs > m)
		return cx4ec_fail(ec, -EINVAL, "%d erasures: a k + %d code recovers 1 to %d", nerrs,
				  m, m);
	for (i = 0; i < nerrs; i++) {
		if (erasures[i] < 0 || erasures[i] >= k + m)
			return cx4ec_fail(ec, -EINVAL, "erasure %d: blocks are 0 to %d", erasures[i],
					  k + m - 1);
		if (erased[erasures[i]])
			return cx4ec_fail(ec, -EINVAL, "erasure %d given twice", erasures[i]);
		erased[erasures[i]] = 1;
	}
	/* Generator row of block e: unit vector for data, coding row for code. */
#define GEN(e, col) ((e) < k ? (unsigned char)((e) == (col)) : rows[((e) - k) * k + (col)])
	/* The first k survivors, in index order: the inputs. */
	for (e = 0, l = 0; e < k + m && l < k; e++) {
		if (erased[e])
			continue;
		for (j = 0; j < k; j++)
			b[l * k + j] = GEN(e, j);
		in[l++] = blocks[e];
	}
	if (cx4ec_gf_invert(fw, k, b, inv))
		return cx4ec_fail(ec, -EDOM, "the surviving blocks' rows are singular: this matrix "
				  "cannot recover these erasures");
	/* Erased block e = G[e] . data = G[e] . inv(B) . survivors; code row j = erasure j. */
	for (l = 0, e = 0; e < k + m; e++) {
		if (!erased[e])
			continue;
		for (j = 0; j < k; j++)
			g[j] = GEN(e, j);
		for (j = 0; j < k; j++) {
			unsigned char c = 0;

			for (i = 0; i < k; i++)
				c ^= cx4ec_gf_mul(fw, g[i], inv[i * k + j]);
			dec[l * k + j] = c;
		}
		out[l++] = blocks[e];
	}
#undef GEN
	/* Decoding coefficients span the whole field even when the code's do not (w = 1, 2). */
	r = cx4ec_init_tables(k, nerrs, fw, dec, &t, why, sizeof(why));
	if (r)
		return cx4ec_fail(ec, r, "%s", why);
	return run(ec, len, &t, in, out);
}

int cx4ec_probe_w8(struct cx4ec *ec)
{
	unsigned char rows[1] = { 0x02 }, *in[1], code[CX4EC_CHUNK], *out[1] = { code };
	struct cx4ec_tables t;
	size_t i;
	int r;

	if (ec->max_block < CX4EC_CHUNK)
		return cx4ec_fail(ec, -EINVAL, "no room for a probe");
	cx4ec_init_tables(1, 1, 8, rows, &t, NULL, 0);
	in[0] = cx4ec_block(ec, 0, CX4EC_CHUNK);
	for (i = 0; i < CX4EC_CHUNK; i++)
		in[0][i] = (unsigned char)(0x80 + i);
	r = run(ec, CX4EC_CHUNK, &t, in, out);
	if (r == -EIO)
		return 0; /* refused: the error completion, QP re-created */
	if (r)
		return r;
	/* 2 * x in GF(2^8)/0x11d: a shift, reduced by 0x1d when the top bit falls out. */
	for (i = 0; i < CX4EC_CHUNK; i++) {
		unsigned char x = (unsigned char)(0x80 + i);
		unsigned char want = (unsigned char)(x << 1) ^ (x & 0x80 ? 0x1d : 0);

		if (code[i] != want)
			return cx4ec_fail(ec, -EPROTO, "8-bit probe: byte %zu is %#x, GF(2^8)/0x11d "
					  "gives %#x", i, code[i], want);
	}
	return 1;
}
