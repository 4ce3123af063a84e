// SPDX-License-Identifier: GPL-2.0
/*
 * cx4ec: erasure coding on the card's vector-calc engine from the command line (libcx4ec).
 *
 *   cx4ec encode -d DEV -k K -m M --block-size N [--w W] [--matrix FILE] [-g GID] IN... OUT...
 *       K data files of N bytes each -> M code files
 *   cx4ec decode -d DEV -k K -m M --block-size N [--w W] [--matrix FILE] [-g GID]
 *                --erased I[,J...] BLOCK...
 *       the K + M block files (data, then code); the erased ones are rewritten
 *   cx4ec probe -d DEV [-g GID]
 *       which widths the engine computes (a checked w = 4 and a w = 8 test calculation)
 *
 * --matrix FILE: the M x K coding matrix, row j = the coefficients of code block j (as
 * tools/ec-ref prints it); default: a Cauchy matrix (ISA-L's gf_gen_cauchy1_matrix rows).
 * W: 4 (default; GF(2^4), ConnectX-4) or 8 (GF(2^8), a device with 8-bit matrices), 1, 2.
 * Exit 0 on success, 1 on a device or calculation error, 2 on bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

#include "cx4ec.h"

static const char *prog = "cx4ec";

static void usage_exit(const char *why)
{
	if (why)
		fprintf(stderr, "%s: %s\n", prog, why);
	fprintf(stderr,
		"usage: %s encode -d DEV -k K -m M --block-size N [--w 4|8] [--matrix FILE] [-g GID] IN... OUT...\n"
		"       %s decode -d DEV -k K -m M --block-size N [--w 4|8] [--matrix FILE] [-g GID] --erased I[,J..] BLOCK...\n"
		"       %s probe -d DEV [-g GID]\n", prog, prog, prog);
	exit(2);
}

static void die(const char *what, const char *why)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, why);
	exit(1);
}

static double secs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Reads exactly len bytes of `path` into buf: a file of another size is a usage error. */
static void read_block(const char *path, unsigned char *buf, size_t len)
{
	FILE *f = fopen(path, "rb");
	char why[160];
	long size;

	if (!f)
		die(path, strerror(errno));
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	rewind(f);
	if (size != (long)len) {
		snprintf(why, sizeof(why), "%s has %ld bytes, the block size is %zu", path, size, len);
		usage_exit(why);
	}
	if (fread(buf, 1, len, f) != len)
		die(path, "short read");
	fclose(f);
}

/* Usage errors before the device is opened: every input file has exactly len bytes. */
static void check_size(const char *path, size_t len)
{
	struct stat st;
	char why[160];

	if (stat(path, &st))
		die(path, strerror(errno));
	if ((size_t)st.st_size != len) {
		snprintf(why, sizeof(why), "%s has %lld bytes, the block size is %zu", path,
			 (long long)st.st_size, len);
		usage_exit(why);
	}
}

static void write_block(const char *path, const unsigned char *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(buf, 1, len, f) != len || fclose(f))
		die(path, strerror(errno));
}

static struct cx4ec *open_dev(const char *dev, int gid, size_t block)
{
	char err[256];
	struct cx4ec *ec = cx4ec_open(dev, gid, block, err, sizeof(err));

	if (!ec)
		die(dev ? dev : "(first device)", err);
	return ec;
}

static void report(struct cx4ec *ec, const char *op, double t0)
{
	struct cx4ec_stats st;

	cx4ec_get_stats(ec, &st);
	printf("%s: %s: %llu calculation(s), %llu B read by the card, %llu B sent back, "
	       "%llu B copied in, %.3f s\n", op, cx4ec_describe(ec),
	       (unsigned long long)st.calcs, (unsigned long long)st.bytes_in,
	       (unsigned long long)st.bytes_out, (unsigned long long)st.copied_in, secs() - t0);
}

static int probe(const char *dev, int gid)
{
	struct cx4ec *ec = open_dev(dev, gid, 4096);
	unsigned char rows[1] = { 0x2 }, out[64], *in[1], *code[1] = { out };
	struct cx4ec_tables t;
	char err[128];
	int i, r8, pass;

	printf("probe: %s\n", cx4ec_describe(ec));
	cx4ec_init_tables(1, 1, 4, rows, &t, err, sizeof(err));
	/* w = 4 before and after the w = 8 probe: a refusal leaves the context usable. */
	for (pass = 0; pass < 2; pass++) {
		in[0] = cx4ec_block(ec, 0, 64);
		for (i = 0; i < 64; i++)
			in[0][i] = (unsigned char)(i * 37 + 11);
		if (cx4ec_encode_data(ec, 64, &t, in, code))
			die("w=4 test calculation", cx4ec_error(ec));
		for (i = 0; i < 64; i++) {
			unsigned char x = (unsigned char)(i * 37 + 11);
			unsigned char want = (unsigned char)(cx4ec_gf_mul(4, 2, x >> 4) << 4 |
							     cx4ec_gf_mul(4, 2, x & 0xf));

			if (out[i] != want) {
				fprintf(stderr, "%s: w=4 test calculation: byte %d is %#x, GF(2^4)/0x13 "
					"gives %#x\n", prog, i, out[i], want);
				return 1;
			}
		}
		printf("w=4: yes (GF(2^4)/0x13 checked)%s\n", pass ? " after the w=8 probe" : "");
		if (pass)
			break;
		r8 = cx4ec_probe_w8(ec);
		if (r8 < 0)
			die("w=8 probe", cx4ec_error(ec));
		printf("w=8: %s\n", r8 ? "yes (GF(2^8)/0x11d checked)" :
		       "no (the card refused 8-bit matrices; QP re-created)");
	}
	cx4ec_close(ec);
	return 0;
}

static int parse_erasures(const char *s, int *e, int max)
{
	int n = 0;
	char *end;

	while (*s) {
		if (n == max)
			usage_exit("too many erasures");
		e[n++] = (int)strtol(s, &end, 10);
		if (end == s)
			usage_exit("--erased: a comma-separated list of block indices");
		s = *end == ',' ? end + 1 : end;
	}
	return n;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "gid-index", required_argument, NULL, 'g' },
		{ "block-size", required_argument, NULL, 'b' },
		{ "w", required_argument, NULL, 'w' },
		{ "matrix", required_argument, NULL, 'x' },
		{ "erased", required_argument, NULL, 'e' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned char rows[CX4EC_MAX_K * CX4EC_MAX_M];
	unsigned char *data[CX4EC_MAX_K], *code[CX4EC_MAX_M], *blocks[CX4EC_MAX_K + CX4EC_MAX_M];
	const char *dev = NULL, *matrix = NULL, *cmd;
	int k = 0, m = 0, w = 4, gid = -1, c, i, nfiles, nerr = 0, erasures[CX4EC_MAX_M + 1];
	long long block = 0;
	struct cx4ec_tables t;
	struct cx4ec *ec;
	char err[160];
	double t0;

	if (argc < 2)
		usage_exit(NULL);
	cmd = argv[1];
	optind = 2;
	while ((c = getopt_long(argc, argv, "d:g:k:m:b:w:", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'g': gid = atoi(optarg); break;
		case 'k': k = atoi(optarg); break;
		case 'm': m = atoi(optarg); break;
		case 'b': block = atoll(optarg); break;
		case 'w': w = atoi(optarg); break;
		case 'x': matrix = optarg; break;
		case 'e': nerr = parse_erasures(optarg, erasures, CX4EC_MAX_M + 1); break;
		default: usage_exit(NULL);
		}
	}
	if (!strcmp(cmd, "probe"))
		return probe(dev, gid);
	if (strcmp(cmd, "encode") && strcmp(cmd, "decode"))
		usage_exit("unknown command");
	if (!dev)
		usage_exit("-d DEV is required");
	if (block <= 0 || block % CX4EC_CHUNK || block > CX4EC_MAX_BLOCK) {
		snprintf(err, sizeof(err), "--block-size %lld: must be a positive multiple of %d, "
			 "at most %u", block, CX4EC_CHUNK, CX4EC_MAX_BLOCK);
		usage_exit(err);
	}
	/* The matrix first: its checks (k, m, w, coefficients) need no device. */
	if (k < 1 || k > CX4EC_MAX_K || m < 1 || m > CX4EC_MAX_M) {
		snprintf(err, sizeof(err), "-k %d -m %d: the engine takes 1 to %d data blocks and "
			 "computes 1 to %d code blocks", k, m, CX4EC_MAX_K, CX4EC_MAX_M);
		usage_exit(err);
	}
	if (matrix) {
		FILE *f = fopen(matrix, "rb");

		if (!f)
			die(matrix, strerror(errno));
		if (fread(rows, 1, (size_t)k * m, f) != (size_t)(k * m)) {
			snprintf(err, sizeof(err), "%s: fewer than %d x %d bytes", matrix, m, k);
			usage_exit(err);
		}
		fclose(f);
	} else if (cx4ec_gen_cauchy_matrix(k, m, w, rows)) {
		snprintf(err, sizeof(err), "no Cauchy matrix for k + m = %d > %d (w = %d)", k + m,
			 1 << (w == 8 ? 8 : 4), w);
		usage_exit(err);
	}
	if (cx4ec_init_tables(k, m, w, rows, &t, err, sizeof(err)))
		usage_exit(err);
	nfiles = argc - optind;

	if (!strcmp(cmd, "encode")) {
		if (nfiles != k + m) {
			snprintf(err, sizeof(err), "encode takes %d input and %d output files, got %d "
				 "files", k, m, nfiles);
			usage_exit(err);
		}
		for (i = 0; i < k; i++)
			check_size(argv[optind + i], (size_t)block);
		ec = open_dev(dev, gid, (size_t)block);
		for (i = 0; i < k; i++) {
			data[i] = cx4ec_block(ec, i, (size_t)block);
			read_block(argv[optind + i], data[i], (size_t)block);
		}
		for (i = 0; i < m; i++)
			if (!(code[i] = malloc((size_t)block)))
				die("encode", "out of memory");
		t0 = secs();
		if (cx4ec_encode_data(ec, (size_t)block, &t, data, code))
			die("encode", cx4ec_error(ec));
		for (i = 0; i < m; i++)
			write_block(argv[optind + k + i], code[i], (size_t)block);
		printf("encode: k=%d m=%d w=%d block %lld B\n", k, m, w, block);
		report(ec, "encode", t0);
		cx4ec_close(ec);
		return 0;
	}

	if (nfiles != k + m) {
		snprintf(err, sizeof(err), "decode takes the %d block files (data, then code), got %d",
			 k + m, nfiles);
		usage_exit(err);
	}
	if (nerr < 1 || nerr > m) {
		snprintf(err, sizeof(err), "--erased: 1 to %d block indices", m);
		usage_exit(err);
	}
	for (i = 0; i < k + m; i++) {
		int j, gone = 0;

		for (j = 0; j < nerr; j++)
			gone |= erasures[j] == i;
		if (!gone)
			check_size(argv[optind + i], (size_t)block);
	}
	ec = open_dev(dev, gid, (size_t)block);
	for (i = 0; i < k + m; i++) {
		int j, gone = 0;

		for (j = 0; j < nerr; j++)
			gone |= erasures[j] == i;
		if (!(blocks[i] = malloc((size_t)block)))
			die("decode", "out of memory");
		if (!gone)
			read_block(argv[optind + i], blocks[i], (size_t)block);
	}
	t0 = secs();
	if (cx4ec_decode_data(ec, (size_t)block, k, m, w, rows, erasures, nerr, blocks))
		die("decode", cx4ec_error(ec));
	for (i = 0; i < nerr; i++)
		write_block(argv[optind + erasures[i]], blocks[erasures[i]], (size_t)block);
	printf("decode: k=%d m=%d w=%d block %lld B, recovered", k, m, w, block);
	for (i = 0; i < nerr; i++)
		printf(" %d", erasures[i]);
	printf("\n");
	report(ec, "decode", t0);
	cx4ec_close(ec);
	return 0;
}
