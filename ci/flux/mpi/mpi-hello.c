/* mpi-hello: every rank prints its rank, the world size, its host and the MPI library; then a
 * ring passes a token from rank to rank (each adds its rank) and an allreduce sums the ranks, so
 * that data crosses between every pair of neighbouring ranks. Exit 1 when a sum is wrong.
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
    if (rank == 0) {
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
