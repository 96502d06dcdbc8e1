/* mpi_xchg — N bytes between two ranks both ways at once (MPI_Sendrecv,
 * the step of a two-rank ring allreduce) against one way (MPI_Send, then
 * an 8-byte answer), mean µs per exchange over ITERS, after a warm-up
 * round of the same (to find where the 1 MiB allreduce loses to TCP).
 *
 *   mpicc -O2 -o mpi_xchg bench/rnic/mpi_xchg.c
 *   mpirun -np 2 ... mpi_xchg ITERS BYTES     (launch as bench/run's mpi_run)
 *
 * Prints "N B: both ways at once X us, one way Y us" from rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	int rank, size, iters = argc > 1 ? atoi(argv[1]) : 300;
	size_t n = argc > 2 ? (size_t)atol(argv[2]) : 524288;
	char *s = malloc(n ? n : 1), *r = malloc(n > 8 ? n : 8);
	double both = 0, one = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2 || !s || !r || iters < 1 || n < 8 || n > (1u << 30)) {
		if (rank == 0)
			fprintf(stderr, "mpi_xchg: 2 ranks, ITERS >= 1, 8 <= BYTES <= 1 GiB\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	memset(s, 1, n);
	for (int round = 0; round < 2; round++) {   /* the first warms up */
		int peer = 1 - rank;
		double t0;

		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (int i = 0; i < iters; i++)
			MPI_Sendrecv(s, (int)n, MPI_BYTE, peer, 1, r, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
				     MPI_STATUS_IGNORE);
		both = (MPI_Wtime() - t0) * 1e6 / iters;
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (int i = 0; i < iters; i++) {
			if (rank == 0) {
				MPI_Send(s, (int)n, MPI_BYTE, 1, 2, MPI_COMM_WORLD);
				MPI_Recv(r, 8, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			} else {
				MPI_Recv(r, (int)n, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				MPI_Send(s, 8, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
			}
		}
		one = (MPI_Wtime() - t0) * 1e6 / iters;
	}
	if (rank == 0)
		printf("%zu B: both ways at once %.1f us, one way %.1f us\n", n, both, one);
	free(s);
	free(r);
	MPI_Finalize();
	return 0;
}
