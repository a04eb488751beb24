"""``python3 -m stratacl.info``: scl-info's report (build, machine, heap, cost model, settings)."""
import os
import sys

from ._paths import SCL_INFO


def main(argv):
    os.execv(SCL_INFO, [SCL_INFO] + argv)


if __name__ == "__main__":
    main(sys.argv[1:])
