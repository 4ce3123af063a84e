// SPDX-License-Identifier: GPL-2.0
/*
 * Galois-field arithmetic on the host: what the library needs to build decoding matrices
 * (inverse of the survivors' generator rows) and Cauchy matrices. The card does the block
 * arithmetic; the host only ever multiplies k x k small matrices.
 *
 * The fields are the engine's: GF(2^4) with x^4 + x + 1 (0x13; w = 1, 2 and 4 all use it,
 * as libmlx5 and GF-Complete do) and GF(2^8) with x^8 + x^4 + x^3 + x^2 + 1 (0x11d, ISA-L's
 * and Linux raid6's).
 */
#include <errno.h>
#include <string.h>

#include "cx4ec.h"
#include "internal.h"

struct field {
	int order;               /* 2^w - 1 */
	unsigned char exp[512];  /* exp[i] = x^i, doubled so log a + log b needs no reduction */
	unsigned char log[256];
	int ready;
};

static struct field f4, f8;

static const struct field *field(int w)
{
	struct field *f = w == 8 ? &f8 : &f4;
	unsigned int poly = w == 8 ? 0x11d : 0x13, top = w == 8 ? 0x100 : 0x10;
	unsigned int x = 1;
	int i;

	if (f->ready)
		return f;
	f->order = (int)top - 1;
	for (i = 0; i < f->order; i++) {
		f->exp[i] = (unsigned char)x;
		f->exp[i + f->order] = (unsigned char)x;
		f->log[x] = (unsigned char)i;
		x <<= 1;
		if (x & top)
			x ^= poly;
	}
	f->ready = 1;
	return f;
}

unsigned char cx4ec_gf_mul(int w, unsigned char a, unsigned char b)
{
	const struct field *f = field(w);

	if (!a || !b)
		return 0;
	return f->exp[f->log[a] + f->log[b]];
}

/* 1 / a (a != 0). */
static unsigned char gf_inv(int w, unsigned char a)
{
	const struct field *f = field(w);

	return f->exp[(f->order - f->log[a]) % f->order];
}

int cx4ec_gen_cauchy_matrix(int k, int m, int w, unsigned char *rows)
{
	int i, j, fw = gf_width(w);

	if (k < 1 || m < 1 || k + m > (1 << fw))
		return -EINVAL;
	for (j = 0; j < m; j++)
		for (i = 0; i < k; i++)
			rows[j * k + i] = gf_inv(fw, (unsigned char)((k + j) ^ i));
	return 0;
}

int cx4ec_gf_invert(int w, int n, const unsigned char *in, unsigned char *out)
{
	unsigned char a[CX4EC_MAX_K * CX4EC_MAX_K];
	int fw = gf_width(w), i, j, r;

	if (n < 1 || n > CX4EC_MAX_K)
		return -EINVAL;
	memcpy(a, in, (size_t)n * n);
	memset(out, 0, (size_t)n * n);
	for (i = 0; i < n; i++)
		out[i * n + i] = 1;
	/* Gauss-Jordan: addition is XOR, so row operations are XORs of scaled rows. */
	for (i = 0; i < n; i++) {
		unsigned char p;

		for (r = i; r < n && !a[r * n + i]; r++)
			;
		if (r == n)
			return -EDOM;
		if (r != i) {
			for (j = 0; j < n; j++) {
				unsigned char t = a[i * n + j];

				a[i * n + j] = a[r * n + j];
				a[r * n + j] = t;
				t = out[i * n + j];
				out[i * n + j] = out[r * n + j];
				out[r * n + j] = t;
			}
		}
		p = gf_inv(fw, a[i * n + i]);
		for (j = 0; j < n; j++) {
			a[i * n + j] = cx4ec_gf_mul(fw, a[i * n + j], p);
			out[i * n + j] = cx4ec_gf_mul(fw, out[i * n + j], p);
		}
		for (r = 0; r < n; r++) {
			unsigned char c = a[r * n + i];

			if (r == i || !c)
				continue;
			for (j = 0; j < n; j++) {
				a[r * n + j] ^= cx4ec_gf_mul(fw, c, a[i * n + j]);
				out[r * n + j] ^= cx4ec_gf_mul(fw, c, out[i * n + j]);
			}
		}
	}
	return 0;
}
