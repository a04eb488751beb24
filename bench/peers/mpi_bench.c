/* MPI peer of scl-bench: the same sizes, warm-up, iterations, busbw and check (see
 * peer_common.h), float32 sum, for Open MPI and MPICH alike. One source, built twice:
 *
 *   mpicc.openmpi -O2 -o mpi_bench.openmpi mpi_bench.c
 *   mpicc.mpich   -O2 -o mpi_bench.mpich   mpi_bench.c
 *   mpirun.openmpi --oversubscribe [--allow-run-as-root] -np 2 ./mpi_bench.openmpi -b 8 -e 256M
 *   mpirun.mpich -np 2 ./mpi_bench.mpich -b 8 -e 256M
 *
 * Collectives: MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter_block, MPI_Alltoall, MPI_Bcast
 * (root 0), all out of place except MPI_Bcast, on buffers from malloc that are touched before
 * any timing. Both libraries run with their default tuning (no MCA parameters, no CVARs).
 *
 * Large temporaries and glibc. The reductions of both MPIs allocate scratch buffers with
 * malloc on every call and free them before returning. glibc serves an allocation above its
 * mmap threshold (128 KiB at first, raised to the size of each mmapped block freed, up to 32 MiB
 * on 64-bit) with a fresh mmap and returns it with munmap, so at large sizes every call pays
 * the page faults of a fresh temporary, about 1.7 us per 4 KiB page here: some 28 ms per
 * 64 MiB of temporary, a large share of the call. Counted with strace at 64 MiB on 2 ranks
 * (Debian 12): one mmap + munmap per call of MPI_Allreduce in both MPIs and of
 * MPI_Reduce_scatter_block in MPICH, two per MPI_Reduce_scatter_block call in Open MPI, none for
 * allgather, alltoall and broadcast. MALLOC_MMAP_MAX_=0 (never mmap: serve from the brk heap)
 * together with MALLOC_TOP_PAD_=<bytes> (keep that much at the top of the heap instead of trimming
 * it) makes the temporaries reuse faulted pages, and the per-call mmaps disappear. We measure the
 * MPIs as they come, with glibc's defaults, and say so; bench/compare --mpi-malloc-tuned runs them
 * with MALLOC_MMAP_MAX_=0 MALLOC_TOP_PAD_=1G instead, to show the difference. */
#include <mpi.h>

#include "peer_common.h"

static void die(const char* what, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  fprintf(stderr, "mpi_bench: %s failed: %s\n", what, text);
  MPI_Abort(MPI_COMM_WORLD, 3);
}

#define CALL(x)                           \
  do {                                    \
    int rc_ = (x);                        \
    if (rc_ != MPI_SUCCESS) die(#x, rc_); \
  } while (0)

/* One call of collective c on `count` total elements (see peer_count). */
static void launch(int c, float* send, float* recv, size_t count, int nranks) {
  const int chunk = (int)(count / (size_t)nranks);
  switch (c) {
    case PEER_ALLREDUCE:
      CALL(MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
      break;
    case PEER_ALLGATHER:
      CALL(MPI_Allgather(send, chunk, MPI_FLOAT, recv, chunk, MPI_FLOAT, MPI_COMM_WORLD));
      break;
    case PEER_REDUCE_SCATTER:
      CALL(MPI_Reduce_scatter_block(send, recv, chunk, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
      break;
    case PEER_ALLTOALL:
      CALL(MPI_Alltoall(send, chunk, MPI_FLOAT, recv, chunk, MPI_FLOAT, MPI_COMM_WORLD));
      break;
    case PEER_BROADCAST:
      CALL(MPI_Bcast(recv, (int)count, MPI_FLOAT, 0, MPI_COMM_WORLD));
      break;
  }
}

static const char* library_name(void) {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  if (strstr(version, "Open MPI") != NULL) return "openmpi";
  if (strstr(version, "MPICH") != NULL) return "mpich";
  return "mpi";
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct peer_options o;
  if (!peer_parse_options(argc, argv, &o)) MPI_Abort(MPI_COMM_WORLD, 2);
  int rank = 0, nranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const char* library = o.label != NULL ? o.label : library_name();
  if (rank == 0) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    char* newline = strchr(version, '\n');
    if (newline != NULL) *newline = '\0';
    printf("# %s: %s; MALLOC_MMAP_MAX_=%s MALLOC_TOP_PAD_=%s\n", library, version,
           getenv("MALLOC_MMAP_MAX_") ? getenv("MALLOC_MMAP_MAX_") : "(glibc default)",
           getenv("MALLOC_TOP_PAD_") ? getenv("MALLOC_TOP_PAD_") : "(glibc default)");
  }
  if (o.max_bytes / sizeof(float) > (size_t)2147483647) {
    if (rank == 0) fprintf(stderr, "mpi_bench: -e exceeds the int element count of MPI\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }

  /* Every collective's send and recv fit in the largest size; touch every page now. */
  const size_t cap = o.max_bytes / sizeof(float) + 16;
  float* send = malloc(cap * sizeof(float));
  float* recv = malloc(cap * sizeof(float));
  if (send == NULL || recv == NULL) {
    fprintf(stderr, "mpi_bench: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  memset(send, 0, cap * sizeof(float));
  memset(recv, 0, cap * sizeof(float));

  unsigned long long total_wrong = 0;
  for (int k = 0; k < PEER_NCOLLECTIVES && o.run[k] >= 0; ++k) {
    const int c = o.run[k];
    for (size_t bytes = o.min_bytes; bytes != 0; bytes = peer_next_size(&o, bytes)) {
      const size_t count = peer_count(c, bytes, nranks);
      if (count == 0) continue;
      if (o.check) {
        size_t in = 0, out = 0;
        peer_geometry(c, count, nranks, rank, &in, &out);
        peer_fill_nan(recv, out);
        if (c == PEER_BROADCAST) {
          if (rank == 0) peer_fill(recv, count, 0);
        } else {
          peer_fill(send, in, rank);
        }
        launch(c, send, recv, count, nranks);
        unsigned long long wrong = peer_count_wrong(c, recv, count, nranks, rank), sum = 0;
        CALL(MPI_Allreduce(&wrong, &sum, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
        if (sum != 0 && rank == 0) {
          fprintf(stderr, "mpi_bench: %s %s %zu B: %llu wrong elements\n", library,
                  peer_collective_names[c], bytes, sum);
        }
        total_wrong += sum;
      }
      for (int i = 0; i < o.warmup; ++i) launch(c, send, recv, count, nranks);
      double local_us = 0, slowest_us = 0;
      if (o.blocking == 3) {
        /* Each call alone, after a barrier: the slowest rank's time is the call's completion. */
        for (int i = 0; i < o.iters; ++i) {
          CALL(MPI_Barrier(MPI_COMM_WORLD));
          const double start = MPI_Wtime();
          launch(c, send, recv, count, nranks);
          local_us += (MPI_Wtime() - start) * 1e6;
        }
        local_us /= o.iters;
      } else {
        CALL(MPI_Barrier(MPI_COMM_WORLD));
        const double start = MPI_Wtime();
        for (int i = 0; i < o.iters; ++i) launch(c, send, recv, count, nranks);
        local_us = (MPI_Wtime() - start) * 1e6 / o.iters;
      }
      CALL(MPI_Reduce(&local_us, &slowest_us, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
      if (rank == 0)
        peer_print_row(library, c, nranks, count * sizeof(float), slowest_us, o.repeat);
    }
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return total_wrong == 0 ? 0 : 1;
}
