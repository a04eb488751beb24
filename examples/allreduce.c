/* Sum a vector across all ranks: run with `stratarun -n 4 example_allreduce`. */
#include <stdio.h>
#include <stratacl/stratacl.h>

/* Prints why a call failed; nonzero when it did. */
static int failed(sclResult_t r, const char* call) {
  if (r == sclSuccess) return 0;
  fprintf(stderr, "%s failed: %s: %s\n", call, sclGetErrorString(r), sclGetLastError(NULL));
  return 1;
}
#define CHECK(call) \
  if (failed((call), #call)) return 1

int main(void) {
  const size_t count = 1 << 20;
  sclComm_t comm;
  float* buf;
  int rank, nranks;
  CHECK(sclCommInitFromEnv(&comm));
  CHECK(sclCommUserRank(comm, &rank));
  CHECK(sclCommCount(comm, &nranks));
  /* Heap memory is registered when allocated: the allreduce below copies nothing. */
  CHECK(sclMemAlloc((void**)&buf, count * sizeof(float)));
  for (size_t i = 0; i < count; ++i) buf[i] = (float)(rank + 1);
  CHECK(sclAllReduce(buf, buf, count, sclFloat32, sclSum, comm, NULL));
  const float expect = nranks * (nranks + 1) / 2.0f;
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) wrong += buf[i] != expect;
  printf("rank %d of %d: %zu of %zu elements wrong\n", rank, nranks, wrong, count);
  CHECK(sclMemFree(buf));
  CHECK(sclCommDestroy(comm));
  return wrong != 0;
}
