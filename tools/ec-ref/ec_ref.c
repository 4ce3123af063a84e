// SPDX-License-Identifier: GPL-2.0
/*
 * Reference erasure coding for the cx4 model's vector-calc engine, computed by the libraries
 * MLNX's own tests compare ConnectX hardware with: GF-Complete + Jerasure for w = 4 (GF(2^4),
 * polynomial 0x13, two symbols per byte) and ISA-L for w = 8 (GF(2^8), polynomial 0x11d).
 *
 *   ec_ref encode W K M KIND LEN   stdin: K data blocks of LEN bytes
 *                                  stdout: the M x K coding matrix (row j: the coefficients
 *                                  of code block j over the data blocks), then the M code
 *                                  blocks of LEN bytes
 *   ec_ref decode W K M KIND E...  stdout: for each erased block index E (0..K-1 data,
 *                                  K..K+M-1 code, ascending) a row of K coefficients over the
 *                                  first K surviving blocks in index order (libmlx5's decode
 *                                  inputs); exit 3 if those survivors cannot decode
 *
 * KIND: vand (Jerasure reed_sol_vandermonde_coding_matrix / ISA-L gf_gen_rs_matrix), cauchy
 * (Jerasure cauchy_original_coding_matrix / ISA-L gf_gen_cauchy1_matrix), random:SEED, or
 * raid6 (w = 8, M = 2: P = the XOR of the data, Q = sum of 2^i . D_i as Linux's lib/raid6
 * computes them; encode checks the code blocks against ISA-L's own RAID-6 pq_gen_base).
 * Exit 2: the library has no such matrix (w = 4 needs K + M <= 16).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gf_complete.h>
#include <jerasure.h>
#include <jerasure/cauchy.h>
#include <jerasure/galois.h>
#include <jerasure/reed_sol.h>
#include <isa-l/erasure_code.h>
#include <isa-l/raid.h>

static void die(const char *why)
{
	fprintf(stderr, "ec_ref: %s\n", why);
	exit(1);
}

static unsigned int rng_state;

static unsigned int rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 17;
	rng_state ^= rng_state << 5;
	return rng_state;
}

/* The (K + M) x K generator matrix: identity on top, then the M coding rows. */
static unsigned char *generator(int w, int k, int m, const char *kind)
{
	unsigned char *g = calloc((size_t)(k + m) * k, 1);
	int i, j;

	if (!g)
		die("out of memory");
	if (!strncmp(kind, "random:", 7)) {
		rng_state = (unsigned int)strtoul(kind + 7, NULL, 0) | 1;
		for (i = 0; i < k; i++)
			g[i * k + i] = 1;
		for (i = k * k; i < (k + m) * k; i++)
			g[i] = (unsigned char)(rng() % (w == 8 ? 256 : 16));
		return g;
	}
	if (!strcmp(kind, "raid6")) {
		unsigned char q = 1;

		if (w != 8 || m != 2)
			exit(2);
		for (i = 0; i < k; i++) {
			g[i * k + i] = 1;
			g[k * k + i] = 1;
			g[(k + 1) * k + i] = q;
			q = gf_mul(q, 2);
		}
		return g;
	}
	if (w == 8) {
		if (!strcmp(kind, "vand"))
			gf_gen_rs_matrix(g, k + m, k);
		else if (!strcmp(kind, "cauchy"))
			gf_gen_cauchy1_matrix(g, k + m, k);
		else
			die("unknown matrix kind");
		return g;
	}
	{
		int *cm;

		if (k + m > 16)
			exit(2);
		if (!strcmp(kind, "vand"))
			cm = reed_sol_vandermonde_coding_matrix(k, m, w);
		else if (!strcmp(kind, "cauchy"))
			cm = cauchy_original_coding_matrix(k, m, w);
		else
			die("unknown matrix kind");
		if (!cm)
			exit(2);
		for (i = 0; i < k; i++)
			g[i * k + i] = 1;
		for (i = 0; i < m; i++)
			for (j = 0; j < k; j++)
				g[(k + i) * k + j] = (unsigned char)cm[i * k + j];
		free(cm);
	}
	return g;
}

static unsigned char mul(int w, unsigned char a, unsigned char b)
{
	return w == 8 ? gf_mul(a, b) : (unsigned char)galois_single_multiply(a, b, w);
}

static void *alloc_aligned(size_t n)
{
	void *p;

	if (posix_memalign(&p, 64, n ? n : 64))
		die("out of memory");
	memset(p, 0, n);
	return p;
}

static int encode(int w, int k, int m, const char *kind, long len)
{
	unsigned char *g = generator(w, k, m, kind);
	unsigned char **data = calloc(k, sizeof(*data));
	unsigned char **code = calloc(m, sizeof(*code));
	int i, j;

	if (!data || !code)
		die("out of memory");
	for (i = 0; i < k; i++) {
		data[i] = alloc_aligned(len);
		if (fread(data[i], 1, len, stdin) != (size_t)len)
			die("short data on stdin");
	}
	for (i = 0; i < m; i++)
		code[i] = alloc_aligned(len);
	if (w == 8) {
		unsigned char *tbls = malloc((size_t)k * m * 32);

		if (!tbls)
			die("out of memory");
		ec_init_tables(k, m, &g[k * k], tbls);
		ec_encode_data((int)len, k, m, tbls, data, code);
		free(tbls);
	} else {
		gf_t gf;

		if (!gf_init_easy(&gf, w))
			die("gf_init_easy failed");
		for (i = 0; i < m; i++)
			for (j = 0; j < k; j++)
				gf.multiply_region.w32(&gf, data[j], code[i],
						       g[(k + i) * k + j], (int)len, 1);
	}
	if (!strcmp(kind, "raid6")) {
		/* ISA-L's RAID-6 (pq_gen_base: sources, then P, then Q) must agree. */
		void **pq = calloc(k + 2, sizeof(*pq));

		if (!pq)
			die("out of memory");
		for (i = 0; i < k; i++)
			pq[i] = data[i];
		pq[k] = alloc_aligned(len);
		pq[k + 1] = alloc_aligned(len);
		if (pq_gen_base(k + 2, (int)len, pq))
			die("pq_gen_base failed");
		if (memcmp(pq[k], code[0], len) || memcmp(pq[k + 1], code[1], len))
			die("ISA-L pq_gen_base disagrees with the P/Q matrix encode");
	}
	fwrite(&g[k * k], 1, (size_t)m * k, stdout);
	for (i = 0; i < m; i++)
		fwrite(code[i], 1, len, stdout);
	return 0;
}

static int decode(int w, int k, int m, const char *kind, int ne, char **erased_args)
{
	unsigned char *g = generator(w, k, m, kind);
	unsigned char *b = calloc((size_t)k * k, 1), *inv = calloc((size_t)k * k, 1);
	int *bi = calloc((size_t)k * k, sizeof(int)), *ii = calloc((size_t)k * k, sizeof(int));
	char *erased = calloc(k + m, 1);
	int i, j, l, r = 0;

	if (!b || !inv || !bi || !ii || !erased)
		die("out of memory");
	for (i = 0; i < ne; i++) {
		int e = atoi(erased_args[i]);

		if (e < 0 || e >= k + m)
			die("erasure index out of range");
		erased[e] = 1;
	}
	/* The first K survivors, in index order. */
	for (i = 0; i < k + m && r < k; i++)
		if (!erased[i])
			memcpy(&b[k * r++], &g[k * i], k);
	if (r < k)
		die("fewer than K survivors");
	if (w == 8) {
		if (gf_invert_matrix(b, inv, k))
			exit(3);
	} else {
		for (i = 0; i < k * k; i++)
			bi[i] = b[i];
		if (jerasure_invert_matrix(bi, ii, k, w))
			exit(3);
		for (i = 0; i < k * k; i++)
			inv[i] = (unsigned char)ii[i];
	}
	/* Erased block e = G[e] . data = G[e] . inv . survivors. */
	for (i = 0; i < k + m; i++) {
		if (!erased[i])
			continue;
		for (j = 0; j < k; j++) {
			unsigned char c = 0;

			for (l = 0; l < k; l++)
				c ^= mul(w, g[k * i + l], inv[k * l + j]);
			fputc(c, stdout);
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	int w, k, m;

	if (argc < 6)
		die("usage: ec_ref encode W K M KIND LEN | decode W K M KIND E...");
	w = atoi(argv[2]);
	k = atoi(argv[3]);
	m = atoi(argv[4]);
	if ((w != 4 && w != 8) || k < 1 || k > 255 || m < 1 || m > 4)
		die("bad W, K or M");
	if (w == 4 && galois_init_default_field(4))
		die("galois_init_default_field(4) failed");
	if (!strcmp(argv[1], "encode") && argc == 7)
		return encode(w, k, m, argv[5], atol(argv[6]));
	if (!strcmp(argv[1], "decode"))
		return decode(w, k, m, argv[5], argc - 6, argv + 6);
	die("unknown command");
	return 1;
}
