// SPDX-License-Identifier: GPL-2.0
/*
 * Host check of libcx4ec's field arithmetic against the libraries the VM test compares the
 * card with: every product in GF(2^4) against GF-Complete (galois_single_multiply, w = 4)
 * and in GF(2^8) against ISA-L (gf_mul); Cauchy matrices against ISA-L's
 * gf_gen_cauchy1_matrix; matrix inverses against ISA-L's gf_invert_matrix and Jerasure's
 * jerasure_invert_matrix (random matrices, singular ones refused by both); and the tables'
 * layout (k x n, column 3 zero for m = 3, bit 4 set for w = 4). Prints "N checks passed" or
 * the first disagreement (exit 1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isa-l/erasure_code.h>
#include <jerasure.h>
#include <jerasure/galois.h>

#include "cx4ec.h"

static long checks;

#define CHECK(cond, ...) do { \
	checks++; \
	if (!(cond)) { fprintf(stderr, "gf_check: " __VA_ARGS__); fputc('\n', stderr); exit(1); } \
} while (0)

int main(void)
{
	unsigned char a[16 * 16], inv[16 * 16], ref[16 * 16], g[20 * 16], rows[16 * 4];
	int ia[16 * 16], iinv[16 * 16];
	struct cx4ec_tables t;
	int x, y, k, m, n, i, j, trial;

	if (galois_init_default_field(4))
		return 1;
	for (x = 0; x < 16; x++)
		for (y = 0; y < 16; y++)
			CHECK(cx4ec_gf_mul(4, x, y) == galois_single_multiply(x, y, 4),
			      "GF(16) %d * %d", x, y);
	for (x = 0; x < 256; x++)
		for (y = 0; y < 256; y++)
			CHECK(cx4ec_gf_mul(8, x, y) == gf_mul(x, y), "GF(256) %d * %d", x, y);

	for (k = 1; k <= 16; k++) {
		for (m = 1; m <= 4; m++) {
			gf_gen_cauchy1_matrix(g, k + m, k);
			CHECK(!cx4ec_gen_cauchy_matrix(k, m, 8, rows), "cauchy w8 k%d m%d", k, m);
			CHECK(!memcmp(rows, &g[k * k], k * m), "cauchy w8 k%d m%d differs", k, m);
			CHECK((cx4ec_gen_cauchy_matrix(k, m, 4, rows) == 0) == (k + m <= 16),
			      "cauchy w4 k%d m%d", k, m);
		}
	}

	srand(1);
	for (trial = 0; trial < 2000; trial++) {
		int w = trial & 1 ? 8 : 4, r1, r2;

		n = 1 + rand() % 16;
		for (i = 0; i < n * n; i++) {
			/* Sparse now and then, so that singular matrices occur. */
			a[i] = rand() % 4 ? (unsigned char)(rand() % (w == 8 ? 256 : 16)) : 0;
			ia[i] = a[i];
		}
		r1 = cx4ec_gf_invert(w, n, a, inv);
		if (w == 8) {
			unsigned char tmp[16 * 16];

			memcpy(tmp, a, n * n);
			r2 = gf_invert_matrix(tmp, ref, n);
		} else {
			r2 = jerasure_invert_matrix(ia, iinv, n, 4);
			for (i = 0; i < n * n; i++)
				ref[i] = (unsigned char)iinv[i];
		}
		CHECK((r1 == 0) == (r2 == 0), "w%d n%d: singular for one library only (%d, %d)", w,
		      n, r1, r2);
		if (!r1)
			CHECK(!memcmp(inv, ref, n * n), "w%d n%d: inverse differs", w, n);
	}

	for (i = 0; i < 6 * 3; i++)
		rows[i] = (unsigned char)(i % 16);
	CHECK(!cx4ec_init_tables(6, 3, 4, rows, &t, NULL, 0) && t.n == 4, "tables k6 m3");
	for (i = 0; i < 6; i++) {
		for (j = 0; j < 3; j++)
			CHECK(t.matrix[i * 4 + j] == (0x10 | rows[j * 6 + i]), "entry %d,%d", i, j);
		CHECK(t.matrix[i * 4 + 3] == 0, "padding column of row %d", i);
	}
	rows[0] = 0x1f;
	CHECK(cx4ec_init_tables(6, 3, 4, rows, &t, NULL, 0) < 0, "0x1f accepted for w = 4");
	CHECK(!cx4ec_init_tables(6, 3, 8, rows, &t, NULL, 0) && t.matrix[0] == 0x1f, "w = 8 entry");
	CHECK(cx4ec_init_tables(17, 1, 8, rows, &t, NULL, 0) < 0, "k = 17 accepted");
	CHECK(cx4ec_init_tables(4, 5, 8, rows, &t, NULL, 0) < 0, "m = 5 accepted");
	CHECK(cx4ec_init_tables(4, 2, 3, rows, &t, NULL, 0) < 0, "w = 3 accepted");
	printf("%ld checks passed\n", checks);
	return 0;
}
