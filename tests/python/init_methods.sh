#!/usr/bin/env bash
# init_methods.py under torchrun (env://), and under stratarun with tcp://, file:// and env://
# set by hand, on 3 ranks each.
#   init_methods.sh STRATARUN BUILD_PYTHON_DIR
set -euo pipefail
here=$(dirname "$0")
stratarun=$1 pydir=$2
export PYTHONPATH="$pydir${PYTHONPATH:+:$PYTHONPATH}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# Debian 12's torchrun on Python 3.11 cannot parse its own default "--redirects 0 --tee 0"
# (IntFlag iteration skips 0) and dies before starting a rank; 1 (stdout) parses.
/usr/bin/python3 -m torch.distributed.run --nproc_per_node 3 --master_addr 127.0.0.1 \
  --master_port "$(port)" --redirects 1 --tee 1 --log_dir "$dir/torchrun" \
  "$here/init_methods.py" env
"$stratarun" -n 3 /usr/bin/python3 "$here/init_methods.py" tcp "$(port)"
"$stratarun" -n 3 /usr/bin/python3 "$here/init_methods.py" file "$dir"
"$stratarun" -n 3 /usr/bin/python3 "$here/init_methods.py" env-by-hand "$(port)"
echo "init_methods: torchrun (env://), tcp://, file:// and env:// all work"
