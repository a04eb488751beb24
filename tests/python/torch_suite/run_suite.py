#!/usr/bin/python3
"""Run PyTorch's own distributed test suite against a c10d plugin backend.

The suite is torch.testing._internal.distributed.distributed_test
(DistributedTest._DistTestBase), the same one torch's
test/distributed/test_distributed_spawn.py runs for gloo/nccl/ucc. Each test
spawns --world-size fresh processes (multiprocessing "spawn"); they rendezvous
through a file:// store in a per-test temp dir and sync via a file barrier.

    /usr/bin/python3 tests/python/torch_suite/run_suite.py \\
        --backend gloo_plugin --plugin-module gloo_plugin --world-size 2 \\
        --report /tmp/gloo_plugin_ws2.txt --min-pass 60

--plugin-module is imported in the parent and in every spawned rank before
any process group is created; importing it must call
torch.distributed.Backend.register_backend(<backend name>, creator).
Modules in this directory (e.g. gloo_plugin) are importable by bare name.

Exit status: 0 only if no test failed or errored and at least --min-pass
tests passed.

How the configuration reaches the spawned ranks: a "spawn" child re-imports
this file as __mp_main__ and then unpickles the test class by name, so the
class must be rebuilt identically at import time there. The parent therefore
passes everything through environment variables (inherited by the children)
and both sides call _build_test_class() from them.

Harness-only workarounds for Debian 12 (nothing under /usr is modified):
  * expecttest is not packaged: expecttest.py in this directory stands in.
  * torch 1.13 + Python 3.11: torch/distributed/_shard/sharded_tensor/
    metadata.py uses a dataclass instance as a field default, which 3.11
    rejects ("mutable default ... use default_factory"), so importing _shard
    (which DDP does) fails. _install_shard_metadata_fix() compiles that one
    module from its source with default_factory instead (the upstream fix).
"""

import argparse
import importlib
import importlib.machinery
import logging
import os
import shutil
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
# First on the path: the expecttest stand-in and the plugin modules here.
if HERE not in sys.path:
    sys.path.insert(0, HERE)

# Environment variables the parent hands to the spawned ranks. BACKEND,
# WORLD_SIZE, TEMP_DIR, INIT_METHOD are the ones distributed_test reads.
ENV_PLUGIN = "TORCH_SUITE_PLUGIN_MODULE"
ENV_FEATURES = "TORCH_SUITE_FEATURES"
ENV_UNSUPPORTED = "TORCH_SUITE_UNSUPPORTED"
ENV_START_METHOD = "TORCH_SUITE_START_METHOD"

# DistTestCases.backend_feature sets the backend joins by default. torch
# lists only gloo/nccl/ucc there, and a test gated on a set the backend is not
# in is skipped, so by default a plugin claims everything gloo claims, plus
# "plugin" (third-party backend: counts as available, and is paired with gloo
# in the group-override tests). On a CPU-only box six gated tests actually
# run: the five object collectives (test_[all_]gather_object*,
# test_broadcast_object_list; "gpu") and
# test_DistributedDataParallel_requires_grad ("ddp"); the rest need CUDA.
DEFAULT_FEATURES = "plugin,gpu,cuda,ddp,subgroup"

_SHARD_METADATA = "sharded_tensor.metadata"
_SHARD_BAD = "field(default=TensorProperties())"
_SHARD_GOOD = "field(default_factory=TensorProperties)"


class _FixedSourceLoader(importlib.machinery.SourceFileLoader):
    """Compiles the module from source with the dataclass default fixed.

    Overriding get_code (not get_data) also bypasses any cached .pyc, which
    would hold the unfixed code."""

    def get_code(self, fullname):
        source = self.get_data(self.path).decode("utf-8")
        source = source.replace(_SHARD_BAD, _SHARD_GOOD)
        return compile(source, self.path, "exec", dont_inherit=True)


class _ShardMetadataFinder:
    """Meta-path hook: only torch's sharded_tensor/metadata.py is redirected."""

    @staticmethod
    def find_spec(fullname, path=None, target=None):
        if not (fullname.startswith("torch.distributed.")
                and fullname.endswith(_SHARD_METADATA)):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and isinstance(spec.loader,
                                           importlib.machinery.SourceFileLoader):
            spec.loader = _FixedSourceLoader(fullname, spec.origin)
        return spec


def _install_shard_metadata_fix():
    # Only Python >= 3.11 rejects unhashable dataclass defaults; on a torch
    # that is already fixed the replace() above is a no-op.
    if sys.version_info >= (3, 11) and _ShardMetadataFinder not in sys.meta_path:
        sys.meta_path.insert(0, _ShardMetadataFinder)


def _csv(value):
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def _build_test_class():
    """Import the suite configured for $BACKEND; returns the test class.

    Runs in the parent and, via module import, in every spawned rank."""
    _install_shard_metadata_fix()
    import torch
    import torch.distributed as dist

    if not dist.is_available():
        sys.exit("torch.distributed is not available in this torch build")
    # As test_distributed_spawn.py: comparisons assume full fp32 matmuls.
    torch.backends.cuda.matmul.allow_tf32 = False

    if os.environ.get(ENV_PLUGIN):
        importlib.import_module(os.environ[ENV_PLUGIN])

    backend = os.environ["BACKEND"]
    # distributed_test applies its skip decorators at import time from these
    # sets, so they must be filled in before it is imported.
    from torch.testing._internal.common_distributed import DistTestCases
    for feature in _csv(os.environ.get(ENV_FEATURES)):
        DistTestCases.backend_feature.setdefault(feature, set()).add(backend)
    for collective in _csv(os.environ.get(ENV_UNSUPPORTED)):
        DistTestCases.skip_collective.setdefault(collective, set()).add(backend)

    from torch.testing._internal.distributed.distributed_test import (
        DistributedTest, TestDistBackend)
    # common_distributed does logging.basicConfig(level=INFO), so every spawn
    # and every c10d store barrier is logged; keep the output to the unittest
    # lines (rank exceptions are still logged, at ERROR).
    logging.getLogger().setLevel(logging.WARNING)

    start_method = os.environ.get(ENV_START_METHOD, "spawn")

    class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
        def setUp(self):
            super().setUp()  # fresh TEMP_DIR, INIT_METHOD, barrier dir
            # torch's MultiProcessTestCase starts ranks with "spawn" only (1.13
            # dropped _fork_processes); "fork" is what test_distributed_fork
            # did: the same tests, without each rank importing torch again.
            self._start_processes(
                torch.multiprocessing.get_context(start_method).Process)

    # Spawned ranks find the class by module-level name (pickle), so it must
    # not look like a function local.
    name = "TestDistBackendWithSpawn_" + backend
    TestDistBackendWithSpawn.__name__ = TestDistBackendWithSpawn.__qualname__ = name
    globals()[name] = TestDistBackendWithSpawn
    return TestDistBackendWithSpawn


def _child_skip_reason(test_fn):
    """Reason the spawned ranks would give for skipping test_fn, or None.

    A few suite decorators only skip inside the spawned ranks (sys.exit with a
    TEST_SKIPS code), after the parent has paid for spawning world_size fresh
    interpreters. On this CPU-only, 2-core box that is ~80 tests and minutes
    per run, so the parent decides those up front, with the same condition
    and the same message. Found by walking the functools.wraps chain and
    comparing code objects with the decorators' own wrappers."""
    import torch
    from torch.testing._internal import common_distributed as cd

    def probe():
        pass

    world_size = int(os.environ["WORLD_SIZE"])
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    codes = {
        cd.skip_if_no_gpu(probe).__code__: "no_gpu",
        cd.skip_if_lt_x_gpu(1)(probe).__code__: "lt_x_gpu",
        cd.skip_if_small_worldsize(probe).__code__: "small_worldsize",
        cd.skip_if_odd_worldsize(probe).__code__: "odd_worldsize",
    }
    fn = test_fn
    while fn is not None:
        kind = codes.get(getattr(fn, "__code__", None))
        if kind == "no_gpu":
            if gpus == 0:
                return cd.TEST_SKIPS["no_cuda"].message
            if gpus < world_size:
                return cd.TEST_SKIPS[f"multi-gpu-{world_size}"].message
        elif kind == "lt_x_gpu":
            cells = dict(zip(fn.__code__.co_freevars, fn.__closure__))
            needed = cells["x"].cell_contents
            if gpus < needed:
                return cd.TEST_SKIPS[f"multi-gpu-{needed}"].message
        elif (kind in ("small_worldsize", "odd_worldsize")
              and os.environ["BACKEND"] != "mpi"):
            if kind == "small_worldsize" and world_size <= 2:
                return cd.TEST_SKIPS["small_worldsize"].message
            if kind == "odd_worldsize" and world_size % 2 == 1:
                return cd.TEST_SKIPS["odd_worldsize"].message
        fn = getattr(fn, "__wrapped__", None)
    return None


def _preskip(test, reason):
    # unittest checks __unittest_skip__ on the test method before setUp(),
    # and setUp() is where the ranks get spawned.
    def skipped():
        pass
    skipped.__unittest_skip__ = True
    skipped.__unittest_skip_why__ = reason
    setattr(test, test._testMethodName, skipped)


class _RecordingResult(unittest.TextTestResult):
    """TextTestResult that also keeps each test's outcome, reason, duration."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.records = []  # (test name, outcome, detail, seconds)
        self._started = 0.0

    def _record(self, test, outcome, detail=""):
        name = test.id().split(".")[-1]
        self.records.append((name, outcome, detail, time.monotonic() - self._started))

    def startTest(self, test):
        self._started = time.monotonic()
        super().startTest(test)

    def addSuccess(self, test):
        super().addSuccess(test)
        self._record(test, "pass")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._record(test, "skip", reason)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._record(test, "fail", self.failures[-1][1])

    def addError(self, test, err):
        super().addError(test, err)
        self._record(test, "error", self.errors[-1][1])

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._record(test, "pass", "expected failure")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._record(test, "fail", "unexpected success")


def _parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", required=True,
                        help="backend name as passed to init_process_group")
    parser.add_argument("--world-size", type=int, required=True)
    parser.add_argument("--plugin-module",
                        help="module whose import registers the backend")
    parser.add_argument("--report", help="write skipped/failed tests here")
    parser.add_argument("--min-pass", type=int, default=0,
                        help="fail unless at least this many tests pass")
    parser.add_argument("--features", default=DEFAULT_FEATURES,
                        help="DistTestCases.backend_feature sets to join "
                             "(comma list; default %(default)s; empty for "
                             "gloo/nccl/ucc, which torch lists already)")
    parser.add_argument("--unsupported", default="",
                        help="DistTestCases.skip_collective sets to join, "
                             "e.g. 'reduce,sendrecv anysource,cpu barrier,"
                             "allgather_coalesced'")
    parser.add_argument("-k", dest="patterns", action="append", default=[],
                        help="run only tests whose name contains this "
                             "(repeatable)")
    parser.add_argument("--expect-fail", action="append", default=[],
                        metavar="TEST",
                        help="a known failure: still run and reported, but "
                             "does not make the exit status nonzero "
                             "(repeatable)")
    parser.add_argument("--no-preskip", action="store_true",
                        help="spawn ranks even for tests that can only skip "
                             "there (slower; same results)")
    parser.add_argument("--start-method", choices=("spawn", "fork"),
                        default="spawn",
                        help="how ranks start: spawn (fresh interpreters, "
                             "as test_distributed_spawn) or fork (from the "
                             "parent, as test_distributed_fork; seconds "
                             "faster per test)")
    parser.add_argument("--test-timeout", type=int, default=120,
                        help="seconds before a hung test's ranks are killed "
                             "(torch's default is 300)")
    return parser.parse_args()


def _write_report(path, args, records, elapsed):
    with open(path, "w") as out:
        out.write(f"backend={args.backend} world_size={args.world_size} "
                  f"plugin_module={args.plugin_module} features={args.features} "
                  f"unsupported={args.unsupported} elapsed={elapsed:.0f}s\n")
        counts = {}
        for _, outcome, _, _ in records:
            counts[outcome] = counts.get(outcome, 0) + 1
        out.write(" ".join(f"{k}={v}" for k, v in sorted(counts.items())) + "\n")
        for wanted in ("fail", "error", "xfail", "skip"):
            for name, outcome, detail, _ in sorted(records):
                if outcome == wanted:
                    out.write(f"\n== {outcome.upper()} {name}\n{detail.rstrip()}\n")
        out.write("\n== PASSED\n")
        for name, outcome, _, seconds in sorted(records):
            if outcome == "pass":
                out.write(f"{name} ({seconds:.1f}s)\n")


def main():
    args = _parse_args()
    if args.world_size < 2:
        sys.exit("--world-size must be >= 2")

    # Hide our flags from common_utils, which parses sys.argv at import (and
    # from the spawned ranks, which inherit sys.argv).
    sys.argv = sys.argv[:1]

    os.environ["BACKEND"] = args.backend
    os.environ["WORLD_SIZE"] = str(args.world_size)
    os.environ[ENV_PLUGIN] = args.plugin_module or ""
    os.environ[ENV_FEATURES] = args.features
    os.environ[ENV_UNSUPPORTED] = args.unsupported
    os.environ[ENV_START_METHOD] = args.start_method
    # common_distributed reads this at import for the per-test join timeout.
    os.environ["DISTRIBUTED_TESTS_DEFAULT_TIMEOUT"] = str(args.test_timeout)
    # As torch's run_test.py: a file:// init method (some tests are skipped
    # under env://). setUp() replaces TEMP_DIR/INIT_METHOD with a fresh dir
    # per test before spawning, so this one only serves the import.
    top_dir = tempfile.mkdtemp(prefix="torch_suite_")
    for sub in ("barrier", "test_dir", "init_dir"):
        os.mkdir(os.path.join(top_dir, sub))
    os.environ["TEMP_DIR"] = top_dir
    os.environ["INIT_METHOD"] = "file://" + os.path.join(top_dir, "init_dir", "shared_init_file")

    test_class = _build_test_class()
    suite = unittest.TestLoader().loadTestsFromTestCase(test_class)
    if args.patterns:
        suite = unittest.TestSuite(
            t for t in suite
            if any(p in t.id().split(".")[-1] for p in args.patterns))
    if not args.no_preskip:
        for test in suite:
            test_fn = getattr(test_class, test._testMethodName)
            if getattr(test_fn, "__unittest_skip__", False):
                continue  # already skipped in the parent, keep its reason
            reason = _child_skip_reason(test_fn)
            if reason:
                _preskip(test, reason + " [decided before spawning]")

    started = time.monotonic()
    runner = unittest.TextTestRunner(stream=sys.stdout, verbosity=2,
                                     resultclass=_RecordingResult)
    result = runner.run(suite)
    elapsed = time.monotonic() - started
    shutil.rmtree(top_dir, ignore_errors=True)

    # Known failures (--expect-fail) become "xfail"; they still go in the
    # report with their traceback.
    records = [(name, "xfail" if outcome in ("fail", "error")
                and name in args.expect_fail else outcome, detail, seconds)
               for name, outcome, detail, seconds in result.records]
    passed = sum(1 for r in records if r[1] == "pass")
    skipped = sum(1 for r in records if r[1] == "skip")
    failed = sum(1 for r in records if r[1] in ("fail", "error"))
    xfailed = sum(1 for r in records if r[1] == "xfail")
    print(f"\nSUMMARY backend={args.backend} world_size={args.world_size}: "
          f"passed={passed} failed={failed} skipped={skipped} "
          f"expected_failures={xfailed} total={len(records)} "
          f"time={elapsed:.0f}s")
    for name, outcome, _, _ in sorted(records):
        if outcome in ("fail", "error", "xfail"):
            print(f"  {outcome.upper()}: {name}")
        elif outcome == "pass" and name in args.expect_fail:
            print(f"  PASSED (listed in --expect-fail): {name}")
    if args.report:
        _write_report(args.report, args, records, elapsed)
        print(f"report: {args.report}")

    if failed:
        return 1
    if passed < args.min_pass:
        print(f"only {passed} tests passed, --min-pass is {args.min_pass}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
elif __name__ == "__mp_main__":
    # A spawned rank re-importing this file: rebuild the same class.
    _build_test_class()
