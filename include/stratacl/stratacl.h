/* StrataCL public C API.
 *
 * Mirrors NCCL: an NCCL program ports by renaming the `nccl` prefix to `scl`.
 * C99-compatible. Every function returns sclResult_t unless stated otherwise. */
#ifndef STRATACL_STRATACL_H_
#define STRATACL_STRATACL_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#define SCL_MAJOR 0
#define SCL_MINOR 2
#define SCL_PATCH 0
#define SCL_SUFFIX ""
/* As NCCL_VERSION: one comparable number per release (no pre-2.9 encoding to honour). */
#define SCL_VERSION(X, Y, Z) ((X)*10000 + (Y)*100 + (Z))
#define SCL_VERSION_CODE SCL_VERSION(SCL_MAJOR, SCL_MINOR, SCL_PATCH)

typedef struct sclComm* sclComm_t;
typedef struct sclStream* sclStream_t;

/* Opaque rendezvous token: produced by one process, shared out of band. */
#define SCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[SCL_UNIQUE_ID_BYTES];
} sclUniqueId;

typedef enum {
  sclSuccess = 0,
  sclUnhandledSystemError = 1,
  sclSystemError = 2,
  sclInternalError = 3,
  sclInvalidArgument = 4,
  sclInvalidUsage = 5,
  sclRemoteError = 6,
  sclInProgress = 7,
  sclTimeout = 8,
  sclNumResults = 9
} sclResult_t;

typedef enum {
  sclInt8 = 0,
  sclChar = 0,
  sclUint8 = 1,
  sclInt32 = 2,
  sclInt = 2,
  sclUint32 = 3,
  sclInt64 = 4,
  sclUint64 = 5,
  sclFloat16 = 6,
  sclHalf = 6,
  sclFloat32 = 7,
  sclFloat = 7,
  sclFloat64 = 8,
  sclDouble = 8,
  sclBfloat16 = 9,
  sclFloat8e4m3 = 10,
  sclFloat8e5m2 = 11,
  sclNumTypes = 12
} sclDataType_t;

typedef enum {
  sclSum = 0,
  sclProd = 1,
  sclMax = 2,
  sclMin = 3,
  sclAvg = 4,
  sclNumOps = 5,
  sclMaxRedOp = 0x7fffffff /* operators from sclRedOpCreatePreMulSum lie in [sclNumOps, this] */
} sclRedOp_t;

/* Versioned configuration. Always initialise with SCL_CONFIG_INITIALIZER, then set fields.
 * A field left at SCL_CONFIG_UNDEF_INT (or SCL_CONFIG_UNDEF_PTR) takes its value from the
 * environment or the built-in default. The fields after commName are NCCL's, so that NCCL code
 * that sets them compiles unchanged; those about GPU thread blocks, NVLink and collnet have no
 * meaning on CPU ranks and are accepted and ignored (they must still be SCL_CONFIG_UNDEF_INT or
 * a value NCCL would accept: >= 0). */
#define SCL_CONFIG_UNDEF_INT INT32_MIN
#define SCL_CONFIG_UNDEF_PTR NULL
#define SCL_CONFIG_MAGIC 0x5c1c0f19u
#define SCL_CONFIG_VERSION 2u
typedef struct {
  size_t size;            /* sizeof(sclConfig_t) as compiled by the caller */
  unsigned int magic;     /* SCL_CONFIG_MAGIC */
  unsigned int version;   /* SCL_CONFIG_VERSION */
  int timeoutMs;          /* deadline of every wait, in ms (STRATACL_TIMEOUT_MS) */
  int threads;            /* worker threads per rank, 0: the cost model (STRATACL_THREADS) */
  int copyEngines;        /* copy-engine threads per rank (STRATACL_COPY_ENGINES) */
  int blocking;           /* 1 (default): calls block; 0: NCCL's non-blocking mode (below) */
  long long stagingBytes; /* staging area for foreign buffers (STRATACL_STAGING_BYTES) */
  const char* commName;   /* name shown in errors and scl-info */
  /* Version 2: NCCL's remaining fields. */
  const char* netName; /* accepted, ignored: the provider is STRATACL_NET_PROVIDER's */
  int splitShare;      /* accepted, ignored: a split child shares nothing it could reuse */
  int cgaClusterSize;  /* GPU thread-block fields: accepted, ignored */
  int minCTAs;
  int maxCTAs;
  int trafficClass;        /* accepted, ignored: no traffic classes on this fabric */
  int collnetEnable;       /* accepted, ignored: no in-network reduction */
  int CTAPolicy;           /* accepted, ignored */
  int shrinkShare;         /* accepted, ignored */
  int nvlsCTAs;            /* accepted, ignored */
  int nChannelsPerNetPeer; /* accepted, ignored: one connection per pair of hosts */
  int nvlinkCentricSched;  /* accepted, ignored */
  int graphUsageMode;      /* accepted, ignored: no CUDA graphs */
  int numRmaCtx;           /* accepted, ignored */
  int maxP2pPeers;         /* accepted, ignored: every peer is reachable */
  int graphStreamOrdering; /* accepted, ignored */
} sclConfig_t;

#define SCL_CONFIG_INITIALIZER                                                                  \
  {                                                                                             \
    sizeof(sclConfig_t), SCL_CONFIG_MAGIC, SCL_CONFIG_VERSION, SCL_CONFIG_UNDEF_INT,            \
        SCL_CONFIG_UNDEF_INT, SCL_CONFIG_UNDEF_INT, SCL_CONFIG_UNDEF_INT, -1LL,                 \
        SCL_CONFIG_UNDEF_PTR, SCL_CONFIG_UNDEF_PTR, SCL_CONFIG_UNDEF_INT, SCL_CONFIG_UNDEF_INT, \
        SCL_CONFIG_UNDEF_INT, SCL_CONFIG_UNDEF_INT, SCL_CONFIG_UNDEF_INT, SCL_CONFIG_UNDEF_INT, \
        SCL_CONFIG_UNDEF_INT, SCL_CONFIG_UNDEF_INT, SCL_CONFIG_UNDEF_INT, SCL_CONFIG_UNDEF_INT, \
        SCL_CONFIG_UNDEF_INT, SCL_CONFIG_UNDEF_INT, SCL_CONFIG_UNDEF_INT, SCL_CONFIG_UNDEF_INT, \
        SCL_CONFIG_UNDEF_INT                                                                    \
  }

/* Non-blocking communicators (config.blocking = 0), as NCCL's: sclCommInitRankConfig,
 * sclCommSplit (with a non-blocking config, or the parent's when config is NULL),
 * sclCommFinalize, and calls on the NULL stream return sclInProgress and go on in the
 * background, in issue order; sclCommGetAsyncError reports sclInProgress until everything
 * issued on the communicator so far is done, then sclSuccess or the first error. The handle
 * *comm is valid at once, for sclCommGetAsyncError, sclCommAbort and sclCommDestroy; other
 * calls on it fail with sclInvalidUsage until its init is done; sclCommAbort of it returns at
 * once, its init left to end in the background (for a peer that never comes). sclMoeCreate and
 * sclMoeDispatch give their plan and handle with sclInProgress. Calls on a real stream behave as
 * in blocking mode (queued, sclSuccess). sclCommShrink blocks in both modes. */

/* Version, errors. */
sclResult_t sclGetVersion(int* version);
const char* sclGetErrorString(sclResult_t result);
/* The last error message of `comm` (or of this thread when comm is NULL): it names the
 * argument, rank or call at fault. Never NULL. */
const char* sclGetLastError(sclComm_t comm);

/* Communicators. */
sclResult_t sclGetUniqueId(sclUniqueId* uniqueId);
sclResult_t sclCommInitRank(sclComm_t* comm, int nranks, sclUniqueId commId, int rank);
sclResult_t sclCommInitRankConfig(sclComm_t* comm, int nranks, sclUniqueId commId, int rank,
                                  sclConfig_t* config);
/* NCCL's init with several unique ids (to spread its bootstrap): every rank passes the same
 * nId ids in the same order. StrataCL's rendezvous is a single root, so commIds[0] is the one
 * used; the others (made by sclGetUniqueId, each serving a root) stay idle. */
sclResult_t sclCommInitRankScalable(sclComm_t* newcomm, int nranks, int myrank, int nId,
                                    sclUniqueId* commIds, sclConfig_t* config);
/* Reads the launcher's environment: stratarun, torchrun, Open MPI, MPICH/Hydra or Slurm. */
sclResult_t sclCommInitFromEnv(sclComm_t* comm);
/* Collective over `comm`. color SCL_SPLIT_NOCOLOR yields *newcomm = NULL; any other negative
 * color is refused (sclInvalidArgument), as NCCL's. */
#define SCL_SPLIT_NOCOLOR (-1)
sclResult_t sclCommSplit(sclComm_t comm, int color, int key, sclComm_t* newcomm,
                         sclConfig_t* config);
/* A single process holds one rank in this design (its heap, liveness and fork guard are the
 * rank's), so sclCommInitAll creates a communicator only for ndev == 1 (devlist ignored or
 * {0}); for more ranks it fails with sclInvalidUsage: start one process per rank (stratarun). */
sclResult_t sclCommInitAll(sclComm_t* comm, int ndev, const int* devlist);
/* Waits for every call issued before it on `comm` (stream work included), then leaves with the
 * other ranks (a departure barrier), releasing what peers could still read. Later calls fail;
 * sclCommDestroy then frees the rest locally, without waiting for anyone. */
sclResult_t sclCommFinalize(sclComm_t comm);
/* Finalizes `comm` if sclCommFinalize has not, then frees it. */
sclResult_t sclCommDestroy(sclComm_t comm);
/* Revokes `comm` on every rank and destroys it. Callable from any thread, also while another
 * thread is blocked in a call on `comm` (that call then fails within milliseconds). Not
 * async-signal-safe: from a signal handler, set a flag that an ordinary thread acts on.
 * Calls on one communicator run in the order they were issued, whatever their streams. In a
 * process forked after StrataCL started, every call returns sclInvalidUsage. */
sclResult_t sclCommAbort(sclComm_t comm);
/* Surviving a failure (as NCCL 2.27's ncclCommRevoke and ncclCommShrink, and ULFM).
 * sclCommRevoke: every rank's pending and later calls on `comm` fail (sclRemoteError, naming the
 * rank that revoked it); sclCommShrink and sclCommDestroy still work. revokeFlags must be
 * SCL_REVOKE_DEFAULT. Callable from any thread.
 * sclCommShrink: every rank not in excludeRanksList calls it; together they build *newcomm, the
 * communicator of the survivors, ranked in their order in `comm`, without a new rendezvous.
 * Survivors agree on who is gone: the ranks excluded by any survivor, and those that died or
 * (across hosts) were lost before the agreement, even when ranks die during it; every survivor
 * gets the same *newcomm, whose size (sclCommCount) may therefore be smaller than asked. A rank
 * that dies after the agreement is a member: the first call on *newcomm names it, and the
 * survivors shrink again. SCL_SHRINK_ABORT revokes `comm` first, so calls still pending on it fail
 * at once (use it after an error); SCL_SHRINK_DEFAULT waits for them. Heap buffers stay valid.
 * config NULL: the parent's configuration. A failed shrink may be called again; after one that
 * succeeded, shrink the child on a later failure. Then destroy `comm` (it does not wait for the
 * excluded ranks). */
#define SCL_REVOKE_DEFAULT 0x00
#define SCL_SHRINK_DEFAULT 0x00
#define SCL_SHRINK_ABORT 0x01
sclResult_t sclCommRevoke(sclComm_t comm, int revokeFlags);
sclResult_t sclCommShrink(sclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                          sclComm_t* newcomm, sclConfig_t* config, int shrinkFlags);
/* The first error of a call that failed in the background (a stream's or a non-blocking
 * communicator's), or sclInProgress while a non-blocking communicator has work pending. */
sclResult_t sclCommGetAsyncError(sclComm_t comm, sclResult_t* asyncError);
sclResult_t sclCommCount(const sclComm_t comm, int* count);
sclResult_t sclCommUserRank(const sclComm_t comm, int* rank);

/* Memory: the registration-on-allocation heap. Buffers from sclMemAlloc are reachable by every
 * peer on the host with no copy and no registration. */
sclResult_t sclMemAlloc(void** ptr, size_t size);
sclResult_t sclMemFree(void* ptr);
/* Registration of foreign memory (malloc, framework tensors): peers then read the buffer with a
 * kernel-assisted single copy (process_vm_readv) instead of it being staged. Registering a range
 * again returns the same handle with one more reference; overlapping ranges may be registered
 * separately; each sclCommDeregister drops one reference. Fails with sclSystemError when the
 * kernel forbids such reads (Yama ptrace_scope, seccomp), or sclRemoteError when a peer's
 * control block is not where it announced it; if a peer is refused, calls stage registered
 * buffers and log why. */
sclResult_t sclCommRegister(const sclComm_t comm, void* buff, size_t size, void** handle);
sclResult_t sclCommDeregister(const sclComm_t comm, void* handle);
/* NCCL's symmetric-memory windows. Every buffer from sclMemAlloc is already a window (it is
 * registered when allocated): registering one records it and returns a handle, with no
 * collective and no copy. Other memory is registered as sclCommRegister does. winFlags: any of
 * SCL_WIN_COLL_SYMMETRIC (a hint: every rank's window has the same size) and
 * SCL_WIN_STRICT_ORDERING (calls on a communicator run in issue order already). Windows need no
 * alignment beyond their elements'. */
#define SCL_WIN_DEFAULT 0x00
#define SCL_WIN_COLL_SYMMETRIC 0x01
#define SCL_WIN_STRICT_ORDERING 0x02
#define SCL_WIN_REQUIRED_ALIGNMENT 1
typedef struct sclWindow* sclWindow_t;
sclResult_t sclCommWindowRegister(sclComm_t comm, void* buff, size_t size, sclWindow_t* win,
                                  int winFlags);
sclResult_t sclCommWindowDeregister(sclComm_t comm, sclWindow_t win);
/* The buffer a window was registered with. */
sclResult_t sclWinGetUserPtr(sclComm_t comm, sclWindow_t win, void** outUserPtr);

/* Streams: in-order asynchronous queues. A NULL stream blocks the caller until done. An error of
 * a queued call is reported once, not stuck to the stream: sclStreamSynchronize returns the first
 * error since the previous synchronisation (sclStreamQuery shows it without consuming it), so a
 * stream goes on after a recoverable error such as a mismatch; on a revoked communicator every
 * later call fails by itself. */
sclResult_t sclStreamCreate(sclStream_t* stream);
sclResult_t sclStreamDestroy(sclStream_t stream);
sclResult_t sclStreamSynchronize(sclStream_t stream);
sclResult_t sclStreamQuery(sclStream_t stream); /* sclInProgress while work is pending */
/* Queues a host function on `stream`, as cudaStreamAddCallback does: it runs on the stream's
 * thread once every call queued before it has finished, with sclSuccess or the first error of
 * the calls queued since the previous callback on the stream (so each callback speaks for its
 * own calls), and calls queued after it wait for it. It may issue calls, but must not wait on its
 * own stream (sclStreamSynchronize and sclStreamDestroy of it return sclInvalidUsage there), nor
 * for calls queued behind it there: a call it makes on a communicator with calls queued after the
 * callback on its stream (one that runs here, a split, finalize or destroy) would wait for them
 * and returns sclInvalidUsage; queue it on the stream instead. A call it makes is issued when it
 * runs, as from any thread. A NULL stream runs it at once, here. This is
 * how a framework completes its futures without a polling thread. */
typedef void (*sclStreamCallback_t)(sclStream_t stream, sclResult_t status, void* userData);
sclResult_t sclStreamAddCallback(sclStream_t stream, sclStreamCallback_t callback, void* userData);

/* Reduction operators of a communicator (NCCL's): the sum of every rank's input, each multiplied
 * first by its rank's `scalar`, a value of `datatype` (ranks may pass different scalars).
 * sclScalarHostImmediate reads *scalar now; sclScalarDevice (NCCL: device memory read while the
 * collective runs) reads it, here from host memory, when each call starts, so it must stay valid
 * until the calls using the operator have started. The operator is valid on `comm`, for
 * `datatype`, in allreduce, reduce and reduce-scatter, until sclRedOpDestroy. Each call scales
 * this rank's input into a heap block of its size, which peers then read in place. */
typedef enum { sclScalarDevice = 0, sclScalarHostImmediate = 1 } sclScalarResidence_t;
sclResult_t sclRedOpCreatePreMulSum(sclRedOp_t* op, void* scalar, sclDataType_t datatype,
                                    sclScalarResidence_t residence, sclComm_t comm);
sclResult_t sclRedOpDestroy(sclRedOp_t op, sclComm_t comm);

/* Collectives. In-place rules follow NCCL. A collective, send, receive or MoE dispatch or
 * combine refused for its arguments (a NULL, unaligned or overlapping buffer, a bad dtype, op or
 * root) returns sclInvalidArgument and writes nothing, but still counts as a call every rank (or
 * its peer) makes: it takes its turn, waiting for the peers as the call would have, and their
 * calls fail with sclInvalidUsage naming this rank, so that where only some ranks' calls are
 * refused the next calls still pair. Not so for calls with no peer to pair with (a communicator
 * or stream that is not live, a peer out of range, sclRecvAny, a send to this rank outside a
 * group): those are only refused. Across hosts a refused collective, send or receive ends the
 * communicator instead. */
sclResult_t sclAllReduce(const void* sendbuff, void* recvbuff, size_t count, sclDataType_t datatype,
                         sclRedOp_t op, sclComm_t comm, sclStream_t stream);
sclResult_t sclBroadcast(const void* sendbuff, void* recvbuff, size_t count, sclDataType_t datatype,
                         int root, sclComm_t comm, sclStream_t stream);
/* NCCL's deprecated in-place broadcast: sclBroadcast(buff, buff, ...). */
sclResult_t sclBcast(void* buff, size_t count, sclDataType_t datatype, int root, sclComm_t comm,
                     sclStream_t stream);
sclResult_t sclReduce(const void* sendbuff, void* recvbuff, size_t count, sclDataType_t datatype,
                      sclRedOp_t op, int root, sclComm_t comm, sclStream_t stream);
sclResult_t sclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                         sclDataType_t datatype, sclComm_t comm, sclStream_t stream);
sclResult_t sclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                             sclDataType_t datatype, sclRedOp_t op, sclComm_t comm,
                             sclStream_t stream);
sclResult_t sclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, sclDataType_t datatype,
                        sclComm_t comm, sclStream_t stream);
sclResult_t sclAlltoAllv(const void* sendbuff, const size_t sendcounts[], const size_t sdispls[],
                         void* recvbuff, const size_t recvcounts[], const size_t rdispls[],
                         sclDataType_t datatype, sclComm_t comm, sclStream_t stream);
sclResult_t sclGather(const void* sendbuff, void* recvbuff, size_t count, sclDataType_t datatype,
                      int root, sclComm_t comm, sclStream_t stream);
sclResult_t sclScatter(const void* sendbuff, void* recvbuff, size_t count, sclDataType_t datatype,
                       int root, sclComm_t comm, sclStream_t stream);
sclResult_t sclSend(const void* sendbuff, size_t count, sclDataType_t datatype, int peer,
                    sclComm_t comm, sclStream_t stream);
sclResult_t sclRecv(void* recvbuff, size_t count, sclDataType_t datatype, int peer, sclComm_t comm,
                    sclStream_t stream);
/* A receive from whichever rank's send to us comes first (MPI_ANY_SOURCE; NCCL has none).
 * *source is written with that rank when the receive completes (on a stream: it must stay
 * valid until then). Sends from one rank are received in the order they were posted. One host
 * only (sclInvalidUsage across hosts), and not inside a group. */
sclResult_t sclRecvAny(void* recvbuff, size_t count, sclDataType_t datatype, int* source,
                       sclComm_t comm, sclStream_t stream);
sclResult_t sclBarrier(sclComm_t comm, sclStream_t stream);

/* Groups: sends and receives between Start and End are issued together at End, so exchange
 * patterns written as send/recv lists cannot deadlock. A call refused for its arguments inside a
 * group fails the group: sclGroupEnd returns its error and runs none of it (as NCCL). A group's
 * sends and receives on one communicator share one stream; outside a group, a send or receive to
 * the calling rank is refused (its other half could never come). */
sclResult_t sclGroupStart(void);
sclResult_t sclGroupEnd(void);

/* MoE expert-parallel dispatch and combine (DeepEP semantics), on user buffers: receivers pull the
 * rows they need straight from the senders' buffers, and combine pulls the experts' outputs back
 * to the tokens' ranks. */
typedef struct sclMoe* sclMoe_t;             /* a dispatch/combine plan bound to a communicator */
typedef struct sclMoeHandle* sclMoeHandle_t; /* the routing of one dispatch; drives its combine */
typedef enum { sclMoeTokenMajor = 0, sclMoeExpertMajor = 1 } sclMoeLayout_t;
#define SCL_MOE_CONFIG_MAGIC 0x5c1e0e01u
#define SCL_MOE_CONFIG_VERSION 1u
typedef struct {
  size_t size; /* as sclConfig_t */
  unsigned int magic;
  unsigned int version;
  int hidden;             /* H, elements per token row */
  int topk;               /* k, experts per token */
  int numExperts;         /* E, over all ranks */
  const int* expertRank;  /* E entries, owner of each expert; NULL: E/R consecutive per rank */
  int maxTokensPerRank;   /* T_max: no rank passes more tokens to one dispatch */
  sclDataType_t xType;    /* rows given to dispatch: bf16, fp16, fp32 or fp8 e4m3 */
  sclDataType_t recvType; /* rows received: xType, or fp8 e4m3 from bf16 (quantised in flight) */
  sclDataType_t outType;  /* expert outputs and combine's result: bf16, fp16 or fp32 */
  sclMoeLayout_t layout;
} sclMoeConfig_t;
#define SCL_MOE_CONFIG_INITIALIZER                                                          \
  {                                                                                         \
    sizeof(sclMoeConfig_t), SCL_MOE_CONFIG_MAGIC, SCL_MOE_CONFIG_VERSION, 0, 0, 0, NULL, 0, \
        sclBfloat16, sclBfloat16, sclBfloat16, sclMoeTokenMajor                             \
  }

/* Collective over `comm`: every rank passes the same config (else sclInvalidUsage everywhere). */
sclResult_t sclMoeCreate(sclComm_t comm, const sclMoeConfig_t* config, sclMoe_t* moe);
/* Local, unlike create: each call of a plan ends when every rank is done with it, so ranks may
 * destroy their plans at different moments (a garbage collector's) without waiting for each
 * other. Its handles go with it; calls still queued on a stream finish first. */
sclResult_t sclMoeDestroy(sclMoe_t moe);
/* Experts this rank owns, and the rows of a dispatch's receive buffer (token-major R*T_max,
 * expert-major E_local*R*T_max). */
sclResult_t sclMoeGetInfo(sclMoe_t moe, int* localExperts, size_t* maxRecvRows);
/* Local: tokens per rank (with at least one expert there), tokens per expert, and
 * isTokenInRank[T, R] (0 or 1). */
sclResult_t sclMoeDispatchLayout(sclMoe_t moe, const int64_t* topkIdx, int numTokens,
                                 int* tokensPerRank, int* tokensPerExpert, uint8_t* isTokenInRank);
typedef struct {            /* this rank's tokens */
  const void* x;            /* [T, H] rows of xType */
  const float* scales;      /* [T, H/128] when xType is fp8, else NULL */
  const int64_t* topkIdx;   /* [T, k] expert ids, -1 = none */
  const float* topkWeights; /* [T, k], or NULL */
  int numTokens;            /* T */
} sclMoeTokens_t;
typedef struct {        /* what this rank receives */
  void* x;              /* rows of recvType (layout below) */
  float* scales;        /* fp8 scales of those rows, else NULL */
  int64_t* topkIdx;     /* token-major: [rows, k] local expert ids; expert-major: NULL */
  float* topkWeights;   /* token-major: [rows, k]; expert-major: NULL */
  int* tokensPerExpert; /* [E_local] */
  int* numRows;         /* token-major: rows received; expert-major: unused (NULL) */
} sclMoeRecv_t;
/* Token-major: one row per (source rank, source token) with an expert here, ordered by source
 * rank, then token. Expert-major: out->x is [E_local, R*T_max, H]; expert e's rows are the
 * (source, token) pairs that chose it, in that order. A non-NULL *handle reuses its routing
 * (in->topkIdx may be NULL): the backward of combine. */
sclResult_t sclMoeDispatch(sclMoe_t moe, const sclMoeTokens_t* in, sclMoeRecv_t* out,
                           sclMoeHandle_t* handle, sclStream_t stream);
/* Token-major: out[t] = sum over t's destination ranks d, ascending, of expertOut_d[row(t, d)].
 * Expert-major: out[t] = sum over j ascending with topkIdx[t, j] >= 0 of topkWeights[t, j] *
 * expertOut[e_j, pos(t, j)] (weights NULL: 1). Accumulates in fp32 in that order, rounds once. */
sclResult_t sclMoeCombine(sclMoe_t moe, sclMoeHandle_t handle, const void* expertOut,
                          const float* topkWeights, void* out, sclStream_t stream);
sclResult_t sclMoeHandleDestroy(sclMoeHandle_t handle);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif /* STRATACL_STRATACL_H_ */
