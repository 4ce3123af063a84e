// SPDX-License-Identifier: GPL-2.0
/*
 * ISA-L erasure-coding encode throughput on the host CPU, for tools/bench/ec_bench.py:
 * gf_gen_cauchy1_matrix + ec_init_tables + ec_encode_data (GF(2^8), polynomial 0x11d; ISA-L
 * picks its fastest kernel for this CPU), one thread, k data blocks of `len` bytes into m code
 * blocks. Prints the data encoded (k × len per call, MB = 10^6 bytes) per second, best of
 * `rounds` rounds of at least `secs` seconds each (the host is shared). The first encode's
 * first code block is checked against gf_mul.
 *
 *   gcc -O2 -o isal_ec_bench isal_ec_bench.c -lisal
 *   isal_ec_bench K M LEN [SECS] [ROUNDS]
 *   -> isal k=K m=M len=LEN mbps=N calls=N rounds=N
 */
#include <isa-l/erasure_code.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s K M LEN [SECS] [ROUNDS]\n", argv[0]);
		return 2;
	}
	int k = atoi(argv[1]), m = atoi(argv[2]), len = atoi(argv[3]);
	double secs = argc > 4 ? atof(argv[4]) : 0.25;
	int rounds = argc > 5 ? atoi(argv[5]) : 3;

	if (k < 1 || m < 1 || k + m > 255 || len < 64 || rounds < 1) {
		fprintf(stderr, "bad parameters\n");
		return 2;
	}
	unsigned char *a = malloc((size_t)(k + m) * k);
	unsigned char *tbls = malloc((size_t)32 * k * m);
	unsigned char *data[k], *code[m];
	unsigned long long seed = 0x15a1bec4;

	gf_gen_cauchy1_matrix(a, k + m, k);
	ec_init_tables(k, m, &a[k * k], tbls);
	for (int i = 0; i < k + m; i++) {
		unsigned char *b;

		if (posix_memalign((void **)&b, 64, len))
			return 1;
		for (int x = 0; x < len; x++) {
			seed ^= seed >> 12;
			seed ^= seed << 25;
			seed ^= seed >> 27;
			b[x] = (seed * 0x2545f4914f6cdd1dULL) >> 56;
		}
		if (i < k)
			data[i] = b;
		else
			code[i - k] = b;
	}
	ec_encode_data(len, k, m, tbls, data, code);
	for (int x = 0; x < 64; x++) {
		unsigned char want = 0;

		for (int i = 0; i < k; i++)
			want ^= gf_mul(a[k * k + i], data[i][x]);
		if (code[0][x] != want) {
			fprintf(stderr, "code block 0 byte %d: %#x != %#x\n", x, code[0][x], want);
			return 1;
		}
	}
	double best = 0;
	long calls = 0;

	for (int r = 0; r < rounds; r++) {
		double t0 = now(), t;
		long n = 0;

		do {
			ec_encode_data(len, k, m, tbls, data, code);
			n++;
			t = now() - t0;
		} while (n < 2 || t < secs);
		if (n / t > best)
			best = n / t;
		calls += n;
	}
	printf("isal k=%d m=%d len=%d mbps=%.1f calls=%ld rounds=%d\n", k, m, len,
	       best * k * len / 1e6, calls, rounds);
	return 0;
}
