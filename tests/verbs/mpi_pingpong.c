/* mpi_pingpong.c — a small MPI program for tests/verbs/mpi.sh: two ranks
 * ping-pong messages of 8 B and 64 KiB (the untimed first tenth with data
 * checked each way, see pingpong()), then an
 * allreduce (sum of a vector whose result each rank can predict).  Prints
 * the round-trip latency of the small message, the bandwidth of the large
 * one and the time of an allreduce of that many bytes, and "mpi ok" when
 * everything matched; exits non-zero otherwise.  bench/run uses it too.
 *   mpirun -np 2 mpi_pingpong [ITERATIONS [LARGE_BYTES]]   (default 64 KiB)
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG (64 * 1024)
#define VEC 1024

static int check(const uint8_t *buf, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		if (buf[i] != (uint8_t)(seed + i * 13))
			return 0;
	return 1;
}

static void fill(uint8_t *buf, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = (uint8_t)(seed + i * 13);
}

/* Round trips of n bytes; rank 0 sends first.  0 on success.  A tenth
 * more (at least one) come first, not timed, as the OSU benchmarks skip
 * their first ones (connections, registration caches and the drop-in's
 * hand-over settle), and each of those carries data checked both ways.
 * The timed ones do not touch the data, as osu_latency and osu_bw do not:
 * filling and checking 1 MiB each way took as long as moving it, and
 * pulled every transport's figure towards the same one. */
static int pingpong(int rank, uint8_t *buf, size_t n, int iters, double *usec)
{
	int peer = 1 - rank, ok = 1, warm = iters / 10 ? iters / 10 : 1;
	double t0 = MPI_Wtime();

	for (int i = -warm; i < iters && ok; i++) {
		uint8_t seed = (uint8_t)(i * 2 + rank);
		int checked = i < 0;

		if (i == 0)
			t0 = MPI_Wtime();
		if (rank == 0) {
			if (checked)
				fill(buf, n, seed);
			MPI_Send(buf, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
			MPI_Recv(buf, (int)n, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			ok = !checked || check(buf, n, (uint8_t)(i * 2 + 1));
		} else {
			MPI_Recv(buf, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			ok = !checked || check(buf, n, (uint8_t)(i * 2));
			if (checked)
				fill(buf, n, seed);
			MPI_Send(buf, (int)n, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
		}
	}
	*usec = (MPI_Wtime() - t0) * 1e6 / iters;
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	int rank, size, iters = argc > 1 ? atoi(argv[1]) : 1000, bad = 0, all_bad = 0;
	size_t big = argc > 2 ? (size_t)atol(argv[2]) : BIG, nd = big / sizeof(double);
	int reps = iters / 10 ? iters / 10 : 1;
	uint8_t *buf = malloc(big);
	double *vin = malloc(nd * sizeof(double)), *vout = malloc(nd * sizeof(double));
	double small_us, big_us, red_us, t0, in[VEC], out[VEC];

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2 || !buf || !vin || !vout || iters < 1 || big < 8 || big > (1u << 30)) {
		if (rank == 0)
			fprintf(stderr, "mpi_pingpong: run with exactly 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	bad |= pingpong(rank, buf, 8, iters, &small_us);
	bad |= pingpong(rank, buf, big, reps, &big_us);
	for (int i = 0; i < VEC; i++)
		in[i] = (double)(rank + 1) * i;
	MPI_Allreduce(in, out, VEC, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	for (int i = 0; i < VEC; i++)
		if (out[i] != 3.0 * i)       /* (1 + 2) * i */
			bad = 1;
	/* The time of an allreduce of `big` bytes (doubles), checked once. */
	for (size_t i = 0; i < nd; i++)
		vin[i] = (double)(rank + 1) * (double)(i % 1000);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (int r = 0; r < reps; r++)
		MPI_Allreduce(vin, vout, (int)nd, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	red_us = (MPI_Wtime() - t0) * 1e6 / reps;
	for (size_t i = 0; i < nd; i++)
		if (vout[i] != 3.0 * (double)(i % 1000))
			bad = 1;
	MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (rank == 0) {
		printf("8 B round trip %.1f us, %zu B %.1f MB/s (two ways), allreduce %zu B %.1f us\n", small_us, big,
		       2.0 * (double)big / big_us, big, red_us);
		printf("%s\n", all_bad ? "mpi MISMATCH" : "mpi ok");
	}
	free(buf);
	free(vin);
	free(vout);
	MPI_Finalize();
	return all_bad;
}
