/* An NCCL program, written against NCCL's host API as its header declares it, that the build
 * ports to StrataCL by renaming alone (tests/port/port.sh: nccl -> scl, NCCL -> SCL,
 * cudaStream -> sclStream) and then runs on 2 and 3 ranks. It calls every host function of
 * NCCL's header that a CPU library can have; docs/PORTING.md lists the others and why.
 *
 * Buffers come from ncclMemAlloc (host memory here, as device memory would be with NCCL), and
 * every result is checked element by element. The rank and the number of ranks come from the
 * launcher (an MPI program would take them from MPI), and rank 0's unique ids reach the others
 * through files in the directory named by argv[1] (an MPI program would broadcast them). */
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int g_rank, g_nranks;

#define CHECK(call)                                                                          \
  do {                                                                                       \
    ncclResult_t r_ = (call);                                                                \
    if (r_ != ncclSuccess && r_ != ncclInProgress) {                                         \
      fprintf(stderr, "rank %d: %s failed: %s: %s\n", g_rank, #call, ncclGetErrorString(r_), \
              ncclGetLastError(NULL));                                                       \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

static int g_failures;
static void expect(int ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "rank %d: FAILED: %s\n", g_rank, what);
    ++g_failures;
  }
}

static void expect_floats(const float* got, const float* want, size_t n, const char* what) {
  for (size_t i = 0; i < n; ++i) {
    if (got[i] != want[i]) {
      fprintf(stderr, "rank %d: %s: element %zu is %g, expected %g\n", g_rank, what, i,
              (double)got[i], (double)want[i]);
      ++g_failures;
      return;
    }
  }
}

/* Rank 0 writes `n` ids as file `name`; the others wait for it. */
static void share_ids(const char* dir, const char* name, ncclUniqueId* ids, int n) {
  char path[512], tmp[520];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  if (g_rank == 0) {
    for (int i = 0; i < n; ++i) CHECK(ncclGetUniqueId(&ids[i]));
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE* f = fopen(tmp, "wb");
    if (!f || fwrite(ids, sizeof(*ids), (size_t)n, f) != (size_t)n || fclose(f) != 0) exit(1);
    if (rename(tmp, path) != 0) exit(1);
    return;
  }
  for (int waited = 0; access(path, R_OK) != 0; ++waited) {
    const struct timespec ms = {0, 1000000};
    if (waited > 60000) exit(1);
    nanosleep(&ms, NULL);
  }
  FILE* f = fopen(path, "rb");
  if (!f || fread(ids, sizeof(*ids), (size_t)n, f) != (size_t)n) exit(1);
  fclose(f);
}

/* Polls a non-blocking communicator until what it was given is done. */
static ncclResult_t settle(ncclComm_t comm) {
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress) CHECK(ncclCommGetAsyncError(comm, &state));
  return state;
}

static float value(int rank, size_t i) { return (float)(rank * 1000 + (int)(i % 997)); }

static void collectives(ncclComm_t comm, cudaStream_t stream) {
  const size_t count = 4099;
  const int n = g_nranks, me = g_rank;
  float *send, *recv, *want;
  CHECK(ncclMemAlloc((void**)&send, count * (size_t)n * sizeof(float)));
  CHECK(ncclMemAlloc((void**)&recv, count * (size_t)n * sizeof(float)));
  want = malloc(count * (size_t)n * sizeof(float));
  for (size_t i = 0; i < count * (size_t)n; ++i) send[i] = value(me, i);

  /* allreduce, and the same with a PreMulSum operator (x 0.5) */
  for (size_t i = 0; i < count; ++i) {
    want[i] = 0;
    for (int r = 0; r < n; ++r) want[i] += value(r, i);
  }
  CHECK(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, stream));
  CHECK(cudaStreamSynchronize(stream));
  expect_floats(recv, want, count, "ncclAllReduce");
  float half = 0.5f;
  ncclRedOp_t premul;
  CHECK(ncclRedOpCreatePreMulSum(&premul, &half, ncclFloat32, ncclScalarHostImmediate, comm));
  CHECK(ncclAllReduce(send, recv, count, ncclFloat32, premul, comm, stream));
  CHECK(cudaStreamSynchronize(stream));
  for (size_t i = 0; i < count; ++i) want[i] *= 0.5f;
  expect_floats(recv, want, count, "ncclAllReduce with ncclRedOpCreatePreMulSum");
  CHECK(ncclRedOpDestroy(premul, comm));

  /* reduce to the last rank */
  for (size_t i = 0; i < count; ++i) want[i] *= 2.0f;
  CHECK(ncclReduce(send, recv, count, ncclFloat, ncclSum, n - 1, comm, stream));
  CHECK(cudaStreamSynchronize(stream));
  if (me == n - 1) expect_floats(recv, want, count, "ncclReduce");

  /* broadcast from rank 0, out of place and in place (ncclBcast) */
  for (size_t i = 0; i < count; ++i) want[i] = value(0, i);
  CHECK(ncclBroadcast(send, recv, count, ncclFloat, 0, comm, stream));
  CHECK(cudaStreamSynchronize(stream));
  expect_floats(recv, want, count, "ncclBroadcast");
  for (size_t i = 0; i < count; ++i) recv[i] = value(n - 1, i) + (float)me;
  for (size_t i = 0; i < count; ++i) want[i] = value(n - 1, i) + (float)(n - 1);
  CHECK(ncclBcast(recv, count, ncclFloat, n - 1, comm, stream));
  CHECK(cudaStreamSynchronize(stream));
  expect_floats(recv, want, count, "ncclBcast");

  /* allgather, reduce-scatter, all-to-all, gather and scatter */
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i) want[(size_t)r * count + i] = value(r, i);
  CHECK(ncclAllGather(send, recv, count, ncclFloat, comm, stream));
  CHECK(cudaStreamSynchronize(stream));
  expect_floats(recv, want, count * (size_t)n, "ncclAllGather");
  CHECK(ncclGather(send, recv, count, ncclFloat, 0, comm, stream));
  CHECK(cudaStreamSynchronize(stream));
  if (me == 0) expect_floats(recv, want, count * (size_t)n, "ncclGather");

  for (size_t i = 0; i < count; ++i) {
    want[i] = 0;
    for (int r = 0; r < n; ++r) want[i] += value(r, (size_t)me * count + i);
  }
  CHECK(ncclReduceScatter(send, recv, count, ncclFloat, ncclSum, comm, stream));
  CHECK(cudaStreamSynchronize(stream));
  expect_floats(recv, want, count, "ncclReduceScatter");

  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i)
      want[(size_t)r * count + i] = value(r, (size_t)me * count + i);
  CHECK(ncclAlltoAll(send, recv, count, ncclFloat, comm, stream));
  CHECK(cudaStreamSynchronize(stream));
  expect_floats(recv, want, count * (size_t)n, "ncclAlltoAll");

  for (size_t i = 0; i < count; ++i) want[i] = value(n - 1, (size_t)me * count + i);
  CHECK(ncclScatter(send, recv, count, ncclFloat, n - 1, comm, stream));
  CHECK(cudaStreamSynchronize(stream));
  expect_floats(recv, want, count, "ncclScatter");

  /* a ring of sends and receives in one group */
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  CHECK(ncclGroupStart());
  CHECK(ncclSend(send, count, ncclFloat, next, comm, stream));
  CHECK(ncclRecv(recv, count, ncclFloat, prev, comm, stream));
  CHECK(ncclGroupEnd());
  CHECK(cudaStreamSynchronize(stream));
  for (size_t i = 0; i < count; ++i) want[i] = value(prev, i);
  expect_floats(recv, want, count, "ncclSend/ncclRecv");

  free(want);
  CHECK(ncclMemFree(send));
  CHECK(ncclMemFree(recv));
}

static void registration(ncclComm_t comm) {
  void* buff;
  CHECK(ncclMemAlloc(&buff, 1 << 20));
  ncclWindow_t win;
  CHECK(ncclCommWindowRegister(comm, buff, 1 << 20, &win, NCCL_WIN_COLL_SYMMETRIC));
  void* user = NULL;
  CHECK(ncclWinGetUserPtr(comm, win, &user));
  expect(user == buff, "ncclWinGetUserPtr gives the registered buffer");
  CHECK(ncclCommWindowDeregister(comm, win));
  CHECK(ncclMemFree(buff));
  /* ncclCommRegister may be refused where the kernel forbids cross-process reads */
  void* other = malloc(1 << 16);
  void* handle = NULL;
  ncclResult_t r = ncclCommRegister(comm, other, 1 << 16, &handle);
  expect(r == ncclSuccess || r == ncclSystemError, "ncclCommRegister");
  if (r == ncclSuccess) CHECK(ncclCommDeregister(comm, handle));
  free(other);
}

static void allreduce_ints(ncclComm_t comm, int nranks, int non_blocking, const char* what) {
  int64_t x[3] = {1, 2, 3};
  ncclResult_t r = ncclAllReduce(x, x, 3, ncclInt64, ncclSum, comm, NULL);
  CHECK(r);
  if (non_blocking) expect(settle(comm) == ncclSuccess, what);
  expect(x[0] == nranks && x[1] == 2 * nranks && x[2] == 3 * nranks, what);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <directory for the unique ids>\n", argv[0]);
    return 2;
  }
  const char* rank_text = getenv("STRATACL_RANK");
  const char* size_text = getenv("STRATACL_WORLD_SIZE");
  if (!rank_text || !size_text) return 2;
  g_rank = atoi(rank_text);
  g_nranks = atoi(size_text);

  int version;
  CHECK(ncclGetVersion(&version));
  expect(version == NCCL_VERSION_CODE &&
             NCCL_VERSION_CODE == NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH),
         "ncclGetVersion");
  printf("rank %d: version %d%s\n", g_rank, version, NCCL_SUFFIX);

  ncclUniqueId id;
  share_ids(argv[1], "world", &id, 1);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  config.commName = "ported";
  config.cgaClusterSize = 4;
  config.minCTAs = 1;
  config.maxCTAs = 32;
  config.netName = NCCL_CONFIG_UNDEF_PTR;
  config.splitShare = 0;
  ncclComm_t world;
  CHECK(ncclCommInitRankConfig(&world, g_nranks, id, g_rank, &config));
  int count = 0, rank = -1;
  CHECK(ncclCommCount(world, &count));
  CHECK(ncclCommUserRank(world, &rank));
  expect(count == g_nranks && rank == g_rank, "ncclCommCount, ncclCommUserRank");

  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  collectives(world, stream);
  collectives(world, NULL);
  registration(world);
  ncclResult_t async;
  CHECK(ncclCommGetAsyncError(world, &async));
  expect(async == ncclSuccess, "ncclCommGetAsyncError");

  /* ncclCommInitRank, and the scalable init with two ids */
  ncclUniqueId ids[2];
  share_ids(argv[1], "plain", ids, 1);
  ncclComm_t plain;
  CHECK(ncclCommInitRank(&plain, g_nranks, ids[0], g_rank));
  allreduce_ints(plain, g_nranks, 0, "ncclCommInitRank");
  CHECK(ncclCommDestroy(plain));
  share_ids(argv[1], "scalable", ids, 2);
  ncclComm_t scalable;
  CHECK(ncclCommInitRankScalable(&scalable, g_nranks, g_rank, 2, ids, NULL));
  allreduce_ints(scalable, g_nranks, 0, "ncclCommInitRankScalable");
  CHECK(ncclCommDestroy(scalable));

  /* split: even and odd ranks; the last rank sits out of a second one */
  ncclComm_t half_comm, rest;
  CHECK(ncclCommSplit(world, g_rank % 2, g_rank, &half_comm, NULL));
  allreduce_ints(half_comm, (g_nranks - g_rank % 2 + 1) / 2, 0, "ncclCommSplit");
  CHECK(ncclCommFinalize(half_comm));
  CHECK(ncclCommDestroy(half_comm));
  CHECK(ncclCommSplit(world, g_rank == g_nranks - 1 ? NCCL_SPLIT_NOCOLOR : 0, 0, &rest, NULL));
  expect((rest == NULL) == (g_rank == g_nranks - 1), "NCCL_SPLIT_NOCOLOR");
  if (rest) {
    allreduce_ints(rest, g_nranks - 1, 0, "ncclCommSplit without the last rank");
    CHECK(ncclCommRevoke(rest, NCCL_REVOKE_DEFAULT));
    CHECK(ncclCommAbort(rest));
  }

  /* non-blocking: a split, a collective and a finalize, each polled */
  ncclConfig_t nb_config = NCCL_CONFIG_INITIALIZER;
  nb_config.blocking = 0;
  ncclComm_t nb;
  CHECK(ncclCommSplit(world, 0, g_rank, &nb, &nb_config));
  expect(settle(nb) == ncclSuccess, "non-blocking ncclCommSplit");
  allreduce_ints(nb, g_nranks, 1, "non-blocking ncclAllReduce");
  CHECK(ncclCommFinalize(nb));
  expect(settle(nb) == ncclSuccess, "non-blocking ncclCommFinalize");
  CHECK(ncclCommDestroy(nb));

  /* one rank per process: ncclCommInitAll of one device */
  ncclComm_t single;
  int dev = 0;
  CHECK(ncclCommInitAll(&single, 1, &dev));
  allreduce_ints(single, 1, 0, "ncclCommInitAll");
  CHECK(ncclCommDestroy(single));

  CHECK(cudaStreamDestroy(stream));
  /* last, as the world is not used after it: shrink, where the survivors leave out the last rank,
   * which does not call it */
  if (g_rank != g_nranks - 1) {
    int excluded = g_nranks - 1;
    ncclComm_t shrunk;
    CHECK(ncclCommShrink(world, &excluded, 1, &shrunk, NULL, NCCL_SHRINK_DEFAULT));
    allreduce_ints(shrunk, g_nranks - 1, 0, "ncclCommShrink");
    CHECK(ncclCommDestroy(shrunk));
  }

  CHECK(ncclCommFinalize(world));
  CHECK(ncclCommDestroy(world));
  printf("rank %d: %s\n", g_rank, g_failures ? "FAILED" : "ported and passed");
  return g_failures ? 1 : 0;
}
