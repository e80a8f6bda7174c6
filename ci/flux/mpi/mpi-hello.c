/* mpi-hello: every rank prints its rank, the world size, its host and the MPI library; then a
 * ring passes a token from rank to rank (each adds its rank) and an allreduce sums the ranks, so
 * that data crosses between every pair of neighbouring ranks. Exit 1 when a sum is wrong.
 * Last, rank 0 and the last rank (another node when ranks are placed in blocks) time a
 * ping-pong: the round trip of 8 bytes, and the bandwidth of BYTES-byte messages.
 *
 *   mpi-hello [BYTES]   BYTES: the size of a second ring message (default 1 MiB), larger than
 *                       what MPI sends eagerly, so it crosses the network in a rendezvous too.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, size, len;
    char host[256], lib[MPI_MAX_LIBRARY_VERSION_STRING];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gethostname(host, sizeof(host));
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, "\n,")] = '\0';
    printf("hello from rank %d of %d on %s (%s)\n", rank, size, host, lib);
    fflush(stdout);

    /* The token goes 0 -> 1 -> ... -> size-1 -> 0; each rank adds its own rank. */
    long token = 0, want = (long)size * (size - 1) / 2;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    if (rank == 0) {
        MPI_Send(&token, 1, MPI_LONG, next, 0, MPI_COMM_WORLD);
        MPI_Recv(&token, 1, MPI_LONG, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(&token, 1, MPI_LONG, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        token += rank;
        MPI_Send(&token, 1, MPI_LONG, next, 0, MPI_COMM_WORLD);
    }

    /* A large message around the ring: every rank sends to next and receives from prev. */
    long bytes = argc > 1 ? atol(argv[1]) : 1 << 20;
    unsigned char *out = malloc(bytes), *in = malloc(bytes);
    for (long i = 0; i < bytes; i++)
        out[i] = (unsigned char)(rank + i);
    MPI_Sendrecv(out, bytes, MPI_BYTE, next, 1, in, bytes, MPI_BYTE, prev, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    int bad = 0;
    for (long i = 0; i < bytes; i++)
        if (in[i] != (unsigned char)(prev + i))
            bad = 1;

    long sum = 0, mine = rank;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    int anybad = 0;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    /* Ping-pong between rank 0 and the last rank: reps round trips of 8 bytes, then of bytes. */
    int peer = size - 1, reps = 50;
    double rtt = 0, bw = 0;
    for (int pass = 0; pass < 2 && peer > 0; pass++) {
        long n = pass == 0 ? 8 : bytes;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < reps; i++) {
            if (rank == 0) {
                MPI_Send(out, n, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
                MPI_Recv(in, n, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == peer) {
                MPI_Recv(in, n, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(out, n, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
            }
        }
        double t = MPI_Wtime() - t0;
        if (pass == 0)
            rtt = t / reps * 1e6;
        else
            bw = 2.0 * reps * n / t / 1e6;
    }

    if (rank == 0) {
        if (peer > 0)
            printf("pingpong: rank 0 and rank %d: 8-byte round trip %.1f us; %ld-byte messages %.1f MB/s\n",
                   peer, rtt, bytes, bw);
        printf("ring: token %ld (want %ld); %ld-byte ring %s; allreduce: sum of ranks %ld (want %ld)\n",
               token, want, bytes, anybad ? "CORRUPT" : "ok", sum, want);
        if (token != want || sum != want || anybad)
            printf("mpi-hello: FAILED\n");
        else
            printf("mpi-hello: ok\n");
    }
    free(out);
    free(in);
    MPI_Finalize();
    return (token != want && rank == 0) || sum != want || anybad;
}
