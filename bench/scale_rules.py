"""The choices StrataCL's inter-host algorithms make, mirrored for the scale model
(bench/scale_model.py, docs/SCALE-MODEL.md): each constant and function names the code it
follows, and must change with it."""
import math

ES = 4                       # float32, as bench/compare measures
DIRECT_MAX = 64 << 10        # net::Rail::kDirectMaxBytes: a rail allreduce up to here is not a ring
DOUBLING_MIN_HOSTS = 4       # STRATACL_NET_DOUBLING_MIN_HOSTS: recursive doubling up to DIRECT_MAX
SPLIT_MIN_REDUNDANT = 64 << 10  # hier's kSplitMinRedundantBytes: small allreduces split over rails
SPREAD_MIN_HOSTS = 3         # hier's kSpreadMinHosts: small allreduces, reduce-scatters spread
BY_RAIL_MAX = 128 << 10      # hier's kByRailMaxBytes: alltoall by rail while L blocks fit
A2A_MSG_BYTES = 6 << 10      # net::Rail::kAlltoallBytesPerMessageCost: alltoall in rounds or not
HALVES_MSG_BYTES = 16 << 10  # net::Rail::kHalvesBytesPerMessageCost: allreduce in halves or not
ONE_SIDED_MIN = 256 << 10    # STRATACL_NET_ONE_SIDED_MIN_BYTES: a clear-to-send first (+alpha)
MANY_SENDERS = 3             # net::Rail::kManySenders: from here, one-sided from less
MOST_SENDERS_COUNTED = 4     # net::Rail::kMostSendersCounted: not below a quarter
SG_MIN_HOSTS = 4             # net::Rail::kScatterGatherMinHosts: scatter-gather, not the ring,
SG_MAX_ROUND = 192 << 10     # while H - 1 chunks are at most kScatterGatherMaxRoundBytes
CHAIN_MSG_BYTES = 128 << 10  # net::Rail::kChainBytesPerMessageCost: chain or flat broadcast
CHAIN_MAX_SEGMENTS = 1024    # net::Rail::kChainMaxSegments
TREE_MIN_HOSTS = 4           # net::Rail::kTreeMinHosts: broadcasts down trees of hosts from here
WIDE_TREE_MAX = 64           # net::Rail::kWideTreeMaxBytes: up to here radix TREE_RADIX, above 2
TREE_RADIX = 2               # STRATACL_NET_TREE_RADIX
SPLIT_BCAST_MIN_BLOCK = 128 << 10  # hier's kSplitBroadcastMinBlock: broadcast split over rails


def one_sided(xfer, senders):
    """net::Rail::one_sided_at: whether transfers of `xfer` bytes, up to `senders` of them into
    a rank at once, go after a clear-to-send."""
    over = min(senders, MOST_SENDERS_COUNTED) if senders >= MANY_SENDERS else 1
    return xfer >= -(-ONE_SIDED_MIN // over)


def tree_radix(S, H):
    """net::Rail::tree_radix: a broadcast's tree of hosts; radix H is the flat broadcast."""
    if H < TREE_MIN_HOSTS:
        return H
    return TREE_RADIX if S <= WIDE_TREE_MAX else 2


def tree_rounds(H, k):
    """net::Rail::tree_rounds: ceil(log_k H)."""
    rounds, span = 0, 1
    while span < H:
        rounds, span = rounds + 1, span * k
    return rounds


def chain_segments(S, H, k):
    """net::Rail::chain_segments: the segments of a broadcast down the chain of hosts, or 0
    where the tree of radix k (radix H: flat, the root's rail sends H - 1 copies) costs less."""
    if H < 3:
        return 0
    x = S / CHAIN_MSG_BYTES
    n = min(CHAIN_MAX_SEGMENTS, max(2, math.floor(math.sqrt((H - 2) * x) + 0.5)))
    tree = tree_rounds(H, k) * ((min(k, H) - 1) * x + 1)
    return n if (n + H - 2) * (n + x) < n * tree and n <= S else 0


def alltoall_rounds(H):
    """net::Rail::alltoall: the slots each round of Bruck's algorithm sends (those of 1..H-1
    with bit k set), one entry per round."""
    out, span = [], 1
    while span < H:
        out.append(sum(1 for i in range(1, H) if i & span))
        span *= 2
    return out


def alltoall_in_rounds(H, L, pack):
    """net::Rail::alltoall_in_rounds for a host's pack of L blocks (`pack` bytes a rail)."""
    if pack <= 0 or H < DOUBLING_MIN_HOSTS:
        return False
    m = alltoall_rounds(H)
    return (sum(m) - (H - 1)) * L * pack < (H - 1 - len(m)) * A2A_MSG_BYTES


def gather_rounds(H):
    """net::Rail::gather_in_rounds (Bruck's): the blocks each round sends, min(2^k, H - 2^k)."""
    out, span = [], 1
    while span < H:
        out.append(min(span, H - span))
        span *= 2
    return out


def halving_rounds(H):
    """net::Rail::reduce_scatter_in_rounds (Bruck's, backwards): the parts each round sends,
    the odd multiples of 2^k below H."""
    out, span = [], 1
    while span < H:
        out.append(((H - 1) // span + 1) // 2)
        span *= 2
    return out


def allreduce_halves_pay(H, L, x):
    """net::Rail::allreduce_halves_pay: the reduce-scatter's and the gather's rounds instead of
    the direct round, for a rail allreduce of x bytes."""
    R = (H - 1).bit_length()
    added = H * (6 * R - 2 * H + 1)
    return added <= 0 or (H - 1) * (H - 2) * L * x > added * HALVES_MSG_BYTES
