/* What every peer benchmark shares (bench/peers/mpi_bench.c, gloo_bench.cc; the Python one,
 * torch_bench.py, follows the same rules):
 *
 *   options   -b MIN -e MAX -f FACTOR   sizes in bytes (K, M, G suffixes), as nccl-tests and
 *                                       scl-bench: MIN, MIN*F, ... while <= MAX
 *             -n ITERS -w WARMUP -c 0|1 timed iterations, untimed ones before, check
 *             -C LIST                   comma-separated collectives: allreduce, allgather,
 *                                       reduce_scatter, alltoall, broadcast
 *             -z 0|3                    3: every timed call between barriers, outside the
 *                                       timing (OSU's way; scl-bench's -z 3), so a call that
 *                                       returns before its data has landed (an eager
 *                                       broadcast's root) is timed by its slowest rank to
 *                                       completion, not pipelined with the next call
 *                                       (mpi_bench only)
 *             --repeat K                the value of the repeat column (the driver's pass)
 *             --label NAME              the value of the library column
 *             --store DIR               rendezvous directory (Gloo only)
 *   sizes     the size S of a row is nccl-tests' (and scl-bench's): allreduce and broadcast the
 *             per-rank buffer, allgather the gathered output, reduce_scatter the input, alltoall
 *             the per-rank send buffer; float32 elements, rounded down to a multiple of the
 *             rank count for the split collectives; rows with no element are skipped
 *   busbw     algbw = S / time, busbw = algbw * 2(n-1)/n (allreduce), (n-1)/n (allgather,
 *             reduce_scatter, alltoall), 1 (broadcast, root 0)
 *   time      per iteration, of the slowest rank: max over ranks of (loop time / iterations),
 *             after a barrier
 *   check     the first call of every size runs on verifiable data: element i of rank r is
 *             ((i + 7r) mod 17) - 8, an integer, so every sum is exact in float32 in any order;
 *             outputs start as NaN; every output element of every rank is compared exactly
 *   output    rank 0 prints one CSV line per row to stdout,
 *             library,collective,ranks,bytes,time_us,busbw_gbs,repeat
 *             and comment lines starting with '#'; exit status 1 when any element is wrong.
 *
 * Plain C99 so that the MPI benchmark stays one C source; C++ includes it as is. */
#ifndef STRATACL_BENCH_PEERS_PEER_COMMON_H_
#define STRATACL_BENCH_PEERS_PEER_COMMON_H_

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/byte_size.h" /* the size parser the library and tools use (-I src) */

enum peer_collective {
  PEER_ALLREDUCE,
  PEER_ALLGATHER,
  PEER_REDUCE_SCATTER,
  PEER_ALLTOALL,
  PEER_BROADCAST,
  PEER_NCOLLECTIVES
};

static const char* const peer_collective_names[PEER_NCOLLECTIVES] = {
    "allreduce", "allgather", "reduce_scatter", "alltoall", "broadcast"};

struct peer_options {
  size_t min_bytes, max_bytes, factor;
  int iters, warmup, check, repeat, blocking;
  int run[PEER_NCOLLECTIVES]; /* order of the -C list: run[k] is a collective, -1 ends it */
  const char* label;
  const char* store;
};

static int peer_parse_size(const char* text, size_t* out) {
  long long v = 0;
  if (scl_parse_byte_size(text, &v) != 0 || v < 0) return 0;
  *out = (size_t)v;
  return 1;
}

static int peer_find_collective(const char* name, size_t len) {
  for (int k = 0; k < PEER_NCOLLECTIVES; ++k) {
    if (strlen(peer_collective_names[k]) == len &&
        strncmp(peer_collective_names[k], name, len) == 0)
      return k;
  }
  return -1;
}

/* Returns 0 and prints a message on a bad command line. */
static int peer_parse_options(int argc, char** argv, struct peer_options* o) {
  o->min_bytes = 8;
  o->max_bytes = (size_t)32 << 20;
  o->factor = 2;
  o->iters = 20;
  o->warmup = 5;
  o->check = 1;
  o->repeat = 1;
  o->blocking = 0;
  o->label = NULL;
  o->store = NULL;
  for (int k = 0; k < PEER_NCOLLECTIVES; ++k) o->run[k] = k; /* all, in table order */
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    int ok = v != NULL;
    if (!strcmp(a, "-b"))
      ok = ok && peer_parse_size(v, &o->min_bytes);
    else if (!strcmp(a, "-e"))
      ok = ok && peer_parse_size(v, &o->max_bytes);
    else if (!strcmp(a, "-f"))
      ok = ok && peer_parse_size(v, &o->factor) && o->factor >= 2;
    else if (!strcmp(a, "-n"))
      ok = ok && (o->iters = atoi(v)) > 0;
    else if (!strcmp(a, "-w"))
      ok = ok && (o->warmup = atoi(v)) >= 0;
    else if (!strcmp(a, "-c"))
      ok = ok && ((o->check = atoi(v)) == 0 || o->check == 1);
    else if (!strcmp(a, "-z"))
      ok = ok && ((o->blocking = atoi(v)) == 0 || o->blocking == 3);
    else if (!strcmp(a, "--repeat"))
      ok = ok && (o->repeat = atoi(v)) >= 0;
    else if (!strcmp(a, "--label"))
      o->label = v;
    else if (!strcmp(a, "--store"))
      o->store = v;
    else if (!strcmp(a, "-C")) {
      int n = 0;
      for (const char* p = v; ok && p != NULL && *p != '\0';) {
        const char* comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        int k = peer_find_collective(p, len);
        if (k < 0 || n == PEER_NCOLLECTIVES)
          ok = 0;
        else
          o->run[n++] = k;
        p = comma ? comma + 1 : NULL;
      }
      for (int k = n; k < PEER_NCOLLECTIVES; ++k) o->run[k] = -1;
      ok = ok && n > 0;
    } else {
      fprintf(stderr, "unknown option %s\n", a);
      return 0;
    }
    if (!ok) {
      fprintf(stderr, "bad value for %s\n", a);
      return 0;
    }
    ++i;
  }
  if (o->min_bytes == 0 || o->min_bytes > o->max_bytes) {
    fprintf(stderr, "need 0 < -b <= -e\n");
    return 0;
  }
  return 1;
}

/* The next size after `size`, or 0 past the maximum. */
static size_t peer_next_size(const struct peer_options* o, size_t size) {
  if (size > o->max_bytes / o->factor) return 0;
  return size * o->factor;
}

static int peer_splits(int c) { return c != PEER_ALLREDUCE && c != PEER_BROADCAST; }

/* Total float32 elements of a row of `bytes` (the nccl-tests count column). */
static size_t peer_count(int c, size_t bytes, int nranks) {
  size_t count = bytes / sizeof(float);
  if (peer_splits(c)) count -= count % (size_t)nranks;
  return count;
}

static double peer_bus_factor(int c, int nranks) {
  switch (c) {
    case PEER_ALLREDUCE:
      return 2.0 * (nranks - 1) / nranks;
    case PEER_BROADCAST:
      return 1.0;
    default:
      return (double)(nranks - 1) / nranks;
  }
}

/* Element i of rank r's input: an integer in [-8, 8]. */
static float peer_value(int r, size_t i) { return (float)(int)((i + 7 * (size_t)r) % 17) - 8.0f; }

static void peer_fill(float* dst, size_t elems, int r) {
  for (size_t i = 0; i < elems; ++i) dst[i] = peer_value(r, i);
}

static void peer_fill_nan(float* dst, size_t elems) {
  for (size_t i = 0; i < elems; ++i) dst[i] = NAN;
}

/* sum17[k] = sum over ranks of the value at any i with i mod 17 == k. */
static void peer_sum_table(float sum17[17], int nranks) {
  for (int k = 0; k < 17; ++k) {
    float s = 0;
    for (int r = 0; r < nranks; ++r) s += peer_value(r, (size_t)k);
    sum17[k] = s;
  }
}

/* Wrong elements of rank `rank`'s output after collective c of `count` total elements (the
 * nccl-tests count: per-rank buffer for allreduce/broadcast, n*chunk for the others). */
static uint64_t peer_count_wrong(int c, const float* out, size_t count, int nranks, int rank) {
  const size_t chunk = count / (size_t)nranks;
  uint64_t wrong = 0;
  float sum17[17];
  peer_sum_table(sum17, nranks);
  switch (c) {
    case PEER_ALLREDUCE:
      for (size_t i = 0; i < count; ++i) wrong += out[i] != sum17[i % 17];
      break;
    case PEER_REDUCE_SCATTER:
      for (size_t j = 0; j < chunk; ++j) wrong += out[j] != sum17[((size_t)rank * chunk + j) % 17];
      break;
    case PEER_ALLGATHER:
      for (size_t i = 0; i < count; ++i) wrong += out[i] != peer_value((int)(i / chunk), i % chunk);
      break;
    case PEER_ALLTOALL:
      for (size_t i = 0; i < count; ++i)
        wrong += out[i] != peer_value((int)(i / chunk), (size_t)rank * chunk + i % chunk);
      break;
    case PEER_BROADCAST:
      for (size_t i = 0; i < count; ++i) wrong += out[i] != peer_value(0, i);
      break;
  }
  return wrong;
}

/* Elements of this rank's input and output for collective c (count: the row's elements). */
static void peer_geometry(int c, size_t count, int nranks, int rank, size_t* in, size_t* out) {
  const size_t chunk = count / (size_t)nranks;
  switch (c) {
    case PEER_ALLGATHER:
      *in = chunk, *out = count;
      break;
    case PEER_REDUCE_SCATTER:
      *in = count, *out = chunk;
      break;
    case PEER_BROADCAST:
      *in = rank == 0 ? count : 0, *out = count;
      break;
    default:
      *in = count, *out = count;
      break;
  }
}

static void peer_print_row(const char* library, int c, int nranks, size_t bytes, double time_us,
                           int repeat) {
  const double algbw = time_us > 0 ? (double)bytes / time_us / 1e3 : 0.0;
  printf("%s,%s,%d,%zu,%.3f,%.6g,%d\n", library, peer_collective_names[c], nranks, bytes, time_us,
         algbw * peer_bus_factor(c, nranks), repeat);
  fflush(stdout);
}

#endif /* STRATACL_BENCH_PEERS_PEER_COMMON_H_ */
