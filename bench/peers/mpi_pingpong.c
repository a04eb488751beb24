/* The MPI side of net-probe (tools/net_probe): small messages between 2 ranks through MPI's
 * point-to-point calls alone, no collective, so that bench/provider-floor can set an MPI's cost
 * per message beside StrataCL's endpoint's, layer by layer, on the same link.
 *
 *   mpirun -np 2 ./mpi_pingpong.openmpi pingpong|exchange|sendrecv [-b BYTES] [-n ITERS]
 *
 * pingpong: rank 0 sends and then receives, rank 1 the other way; prints half a round trip, as
 * fi_pingpong's usec/xfer. exchange: both post a receive and a send at once and wait for both
 * (MPI_Irecv, MPI_Isend, MPI_Waitall), as net-probe's exchange does; prints the time of one.
 * sendrecv: the same exchange as MPI_Sendrecv, which Open MPI runs as a posted receive, a
 * blocking send and a wait: the step its own collectives take between 2 ranks.
 * Every received message is checked (its first and last byte carry the iteration). Output, from
 * rank 0: "<mode> <bytes> B: <us> us". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(void) {
  fprintf(stderr, "usage: mpi_pingpong pingpong|exchange|sendrecv [-b BYTES] [-n ITERS]\n");
  MPI_Abort(MPI_COMM_WORLD, 2);
}

static long positive(const char* text, long most) {
  char* end = NULL;
  const long v = strtol(text, &end, 10);
  if (*end != '\0' || v < 1 || v > most) usage();
  return v;
}

/* The first byte carries the iteration's low bits, the last (where there are two) the next ones. */
static void stamp(unsigned char* buf, long bytes, long i) {
  buf[0] = (unsigned char)i;
  if (bytes > 1) buf[bytes - 1] = (unsigned char)(i >> 8);
}

static void check(const unsigned char* buf, long bytes, long i) {
  if (buf[0] != (unsigned char)i || (bytes > 1 && buf[bytes - 1] != (unsigned char)(i >> 8))) {
    fprintf(stderr, "mpi_pingpong: message %ld arrived wrong\n", i);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (argc < 2 || nranks != 2) usage();
  const int pingpong = strcmp(argv[1], "pingpong") == 0;
  const int sendrecv = strcmp(argv[1], "sendrecv") == 0;
  if (!pingpong && !sendrecv && strcmp(argv[1], "exchange") != 0) usage();
  long bytes = 64, iters = 20000;
  for (int i = 2; i < argc; i += 2) {
    if (i + 1 >= argc) usage();
    if (strcmp(argv[i], "-b") == 0) {
      bytes = positive(argv[i + 1], 1L << 30);
    } else if (strcmp(argv[i], "-n") == 0) {
      iters = positive(argv[i + 1], 100000000L);
    } else {
      usage();
    }
  }
  unsigned char* out = calloc((size_t)bytes, 1);
  unsigned char* in = calloc((size_t)bytes, 1);
  if (out == NULL || in == NULL) usage();
  const int peer = 1 - rank;
  const long warmup = iters / 20 + 1;
  double start = 0;
  for (long i = -warmup; i < iters; ++i) {
    if (i == 0) {
      MPI_Barrier(MPI_COMM_WORLD);
      start = MPI_Wtime();
    }
    stamp(out, bytes, i);
    if (pingpong) {
      if (rank == 0) {
        MPI_Send(out, (int)bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
        MPI_Recv(in, (int)bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(in, (int)bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(out, (int)bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
      }
    } else if (sendrecv) {
      MPI_Sendrecv(out, (int)bytes, MPI_BYTE, peer, 0, in, (int)bytes, MPI_BYTE, peer, 0,
                   MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Request r[2];
      MPI_Irecv(in, (int)bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &r[0]);
      MPI_Isend(out, (int)bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &r[1]);
      MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    }
    check(in, bytes, i);
  }
  const double us = (MPI_Wtime() - start) * 1e6 / (double)iters / (pingpong ? 2 : 1);
  if (rank == 0) printf("%s %ld B: %.2f us\n", argv[1], bytes, us);
  free(out);
  free(in);
  MPI_Finalize();
  return 0;
}
