"""Registers torch's own Gloo process group as a *plugin* backend "gloo_plugin".

This is the control case for run_suite.py: it runs the stock Gloo
implementation through the third-party-backend path of torch.distributed
(Backend.register_backend + the creator function), which is the same path
`import stratacl.torch` uses for "stratacl". Whatever the suite does
differently for a plugin (e.g. names, skips) shows up here first, so
differences between gloo_plugin and stratacl point at the backend itself.

Usage: run_suite.py --backend gloo_plugin --plugin-module gloo_plugin \
           --expect-fail test_ddp_logging_data_cpu ...

Known failure, inherent to this control case: test_ddp_logging_data_cpu
checks that DDP's logged backend_name (the C++ ProcessGroup::getBackendName())
equals the registered name; ProcessGroupGloo says "gloo", not "gloo_plugin".
A real plugin's getBackendName() must return its registered name.
"""

import torch.distributed as dist

NAME = "gloo_plugin"


def _create_gloo_pg(store, rank, size, timeout):
    # Same signature torch calls any non-extended plugin creator with: the
    # store is already a PrefixStore unique to this group.
    return dist.ProcessGroupGloo(store, rank, size, timeout)


# register_backend asserts if the name exists; guard so a second import (or a
# module imported under two names) stays harmless.
if not hasattr(dist.Backend, NAME.upper()):
    dist.Backend.register_backend(NAME, _create_gloo_pg)
