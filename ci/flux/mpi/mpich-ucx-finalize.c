/* mpich-ucx-finalize.so: a fix, through LD_PRELOAD, for a hang in MPI_Finalize of MPICH 4.0.x
 * built with ch4:ucx (Debian 12's MPICH 4.0.2 with UCX 1.13), with two or more ranks per node.
 *
 * That MPI_Finalize closes every UCX endpoint in flush mode (ucp_disconnect_nb), drives UCX
 * until every close is done, and only then enters a blocking PMI barrier. A rank whose closes
 * are done waits in the barrier and no longer drives UCX, while a peer's close that still
 * needs an answer from it never completes: each waits for the other (MPICH fixed the order in
 * pmodels/mpich#6596). Here the close does nothing and completes at once (UCS_OK is NULL):
 * every rank reaches the barrier, and ucp_worker_destroy, after it, tears the endpoints down.
 * All MPI traffic of a correct program has completed before MPI_Finalize, so nothing is lost.
 *
 *   flux run -N 4 -n 8 --env=LD_PRELOAD=/usr/local/lib/mpich-ucx-finalize.so ./app
 */
#include <stddef.h>

void *ucp_disconnect_nb(void *ep)
{
    (void)ep;
    return NULL;
}
