#!/usr/bin/env bash
# Tests for the stratarun launcher. Usage: test_stratarun.sh path/to/stratarun
#
# Ranks are small inline `sh -c` programs; only bash and coreutils are needed. Every check
# prints what it verified; the script exits non-zero if any check failed. Timing checks use
# wide margins so that a loaded 2-core machine does not make them flaky.

set -u

SR=${1:?usage: test_stratarun.sh path/to/stratarun}
if [[ ! -x $SR ]]; then
  echo "FAIL: '$SR' is not an executable" >&2
  exit 2
fi

TEST_DIR=$(mktemp -d "${TMPDIR:-/tmp}/test_stratarun.XXXXXX") || exit 2
trap 'rm -rf "$TEST_DIR"' EXIT
# The ranks find the scratch directory through the environment they inherit.
export SR_TEST_DIR=$TEST_DIR

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
pass() { echo "ok: $*"; }

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# run NAME ARGS...: runs stratarun with ARGS, stdout/stderr to $TEST_DIR/NAME.{out,err}; sets
# $rc and $elapsed_ms. The outer `timeout` only guards against a hanging launcher (the ranks
# die with it through PR_SET_PDEATHSIG).
run() {
  local name=$1 start
  shift
  start=$(now_ms)
  timeout -s KILL 60 "$SR" "$@" >"$TEST_DIR/$name.out" 2>"$TEST_DIR/$name.err"
  rc=$?
  elapsed_ms=$(($(now_ms) - start))
}

# expect_rc NAME WANT: checks the exit status of the last run.
expect_rc() {
  if [[ $rc -eq $2 ]]; then
    pass "$1: exit status $2"
  else
    fail "$1: expected exit status $2, got $rc; stderr was:"
    show "$TEST_DIR/$1.err"
  fi
}

# expect_line NAME FILE REGEX WHAT: checks that some line of FILE matches REGEX (bash ERE).
expect_line() {
  local line
  while IFS= read -r line; do
    if [[ $line =~ $3 ]]; then
      pass "$1: $4"
      return 0
    fi
  done <"$2"
  fail "$1: $4: no line matching '$3' in ${2##*/}:"
  show "$2"
  return 1
}

# count_matching FILE REGEX: prints how many lines of FILE match REGEX (bash ERE).
count_matching() {
  local line count=0
  while IFS= read -r line || [[ -n $line ]]; do
    [[ $line =~ $2 ]] && count=$((count + 1))
  done <"$1"
  echo "$count"
}

# show FILE: copies FILE to stderr, indented, to explain a failure.
show() {
  local line
  while IFS= read -r line || [[ -n $line ]]; do echo "    $line" >&2; done <"$1"
}

# alive PID: true if PID exists and is not a zombie.
alive() {
  local stat
  [[ -r /proc/$1/stat ]] || return 1
  stat=$(<"/proc/$1/stat") 2>/dev/null || return 1
  stat=${stat##*) }  # Drop "pid (comm) ", comm may contain spaces.
  [[ ${stat%% *} != Z ]]
}

# wait_until SECONDS COMMAND...: polls COMMAND every 0.05 s until it succeeds or time is up.
wait_until() {
  local deadline=$(($(now_ms) + $1 * 1000))
  shift
  until "$@"; do
    (($(now_ms) < deadline)) || return 1
    sleep 0.05
  done
}

# inherited_fds FILE: reads the output of `ls -l /proc/self/fd` and prints the fd numbers,
# sorted and space separated, leaving out the directory fd that ls itself opened.
inherited_fds() {
  local line fd target fds=()
  while IFS= read -r line; do
    [[ $line =~ \ ([0-9]+)\ -\>\ (.*)$ ]] || continue
    fd=${BASH_REMATCH[1]} target=${BASH_REMATCH[2]}
    [[ $target =~ ^/proc/[0-9]+/fd$ ]] || fds+=("$fd")
  done <"$1"
  printf '%s\n' "${fds[@]}" | sort -n | tr '\n' ' '
}

# The fds a program started directly by this script inherits; every rank must see exactly these
# (plus the rendezvous socket in rank 0). Programs list their own fds with `exec ls -l`: a shell
# listing its own fds could catch itself in the middle of setting up a pipeline.
sh -c 'exec ls -l /proc/self/fd' >"$TEST_DIR/baseline.fds"
BASELINE_FDS=$(inherited_fds "$TEST_DIR/baseline.fds")

# expected_fds [EXTRA_FD]: the baseline fds plus EXTRA_FD (if given), in inherited_fds's format.
expected_fds() {
  # shellcheck disable=SC2086  # Splitting the baseline into numbers is intended.
  printf '%s\n' $BASELINE_FDS "$@" | sort -n | tr '\n' ' '
}

# ---------------------------------------------------------------------------------------------
test_environment() {
  local baseline=$BASELINE_FDS failures_before=$failures

  # Stale values in stratarun's own environment must be replaced (STRATACL_ROOT_FD dropped).
  # shellcheck disable=SC2016  # Expanded by the ranks, not here.
  STRATACL_ROOT_FD=99 STRATACL_RANK=77 run env -n 4 sh -c '
    d=$SR_TEST_DIR/env.$STRATACL_RANK
    echo "$STRATACL_RANK $STRATACL_WORLD_SIZE $STRATACL_LOCAL_RANK $STRATACL_LOCAL_WORLD_SIZE" \
      "$STRATACL_ROOT_ADDR $STRATACL_JOB_SECRET $STRATACL_LAUNCHER ${STRATACL_ROOT_FD-none}" \
      "${IPATH_NO_BACKTRACE-unset}" > $d
    if [ -n "${STRATACL_ROOT_FD-}" ]; then
      readlink /proc/$$/fd/$STRATACL_ROOT_FD > $d.rootfd
      cat /proc/net/tcp > $d.tcp
    fi
    exec ls -l /proc/self/fd > $d.fds'
  expect_rc env 0

  local rank_expected rank world lrank lworld addr secret launcher rootfd ipath
  local first_addr="" first_secret=""
  for rank_expected in 0 1 2 3; do
    local file=$TEST_DIR/env.$rank_expected
    if [[ ! -s $file ]]; then
      fail "env: rank $rank_expected wrote no environment line"
      continue
    fi
    read -r rank world lrank lworld addr secret launcher rootfd ipath <"$file"
    local where="env: rank $rank_expected"
    [[ $rank == "$rank_expected" ]] || fail "$where: STRATACL_RANK='$rank'"
    [[ $world == 4 ]] || fail "$where: STRATACL_WORLD_SIZE='$world', expected 4"
    [[ $lrank == "$rank_expected" ]] || fail "$where: STRATACL_LOCAL_RANK='$lrank'"
    [[ $lworld == 4 ]] || fail "$where: STRATACL_LOCAL_WORLD_SIZE='$lworld', expected 4"
    [[ $addr =~ ^127\.0\.0\.1:[1-9][0-9]*$ ]] || fail "$where: STRATACL_ROOT_ADDR='$addr'"
    [[ $secret =~ ^[0-9a-f]{32}$ ]] || fail "$where: STRATACL_JOB_SECRET='$secret' (want 32 hex)"
    [[ $launcher == stratarun ]] || fail "$where: STRATACL_LAUNCHER='$launcher'"
    # Kept if the user set it, else 1: libinfinipath then leaves the rank's signals alone.
    [[ $ipath == "${IPATH_NO_BACKTRACE:-1}" ]] || fail "$where: IPATH_NO_BACKTRACE='$ipath'"
    first_addr=${first_addr:-$addr}
    first_secret=${first_secret:-$secret}
    [[ $addr == "$first_addr" ]] || fail "$where: root address differs between ranks"
    [[ $secret == "$first_secret" ]] || fail "$where: job secret differs between ranks"

    local fds
    fds=$(inherited_fds "$file.fds")
    if ((rank_expected == 0)); then
      [[ $fds == $(expected_fds "$rootfd") ]] ||
        fail "$where: open fds '$fds', expected '$baseline' plus the root fd $rootfd"
    else
      [[ $rootfd == none ]] || fail "$where: STRATACL_ROOT_FD is set ('$rootfd'), only rank 0 gets it"
      [[ $fds == "$baseline" ]] || fail "$where: open fds '$fds', expected only '$baseline' (leaked fd?)"
    fi
  done
  if ((failures == failures_before)); then
    pass "env: STRATACL_* variables of ranks 0-3 are correct, no leaked fds"
  fi

  # Rank 0's STRATACL_ROOT_FD must be a socket listening on the port of STRATACL_ROOT_ADDR.
  local link inode port_hex listening=no
  link=$(cat "$TEST_DIR/env.0.rootfd" 2>/dev/null)
  if [[ $link =~ ^socket:\[([0-9]+)\]$ ]]; then
    inode=${BASH_REMATCH[1]}
    printf -v port_hex '%04X' "${first_addr##*:}"
    local local_addr st inode_field
    while read -r _ local_addr _ st _ _ _ _ _ inode_field _; do
      [[ $inode_field == "$inode" && $local_addr == "0100007F:$port_hex" && $st == 0A ]] &&
        listening=yes
    done <"$TEST_DIR/env.0.tcp"
    if [[ $listening == yes ]]; then
      pass "env: rank 0's STRATACL_ROOT_FD is a socket listening on $first_addr"
    else
      fail "env: rank 0's STRATACL_ROOT_FD (socket inode $inode) is not listening on $first_addr"
    fi
  else
    fail "env: rank 0's STRATACL_ROOT_FD is not a socket (readlink gave '$link')"
  fi
}

test_option_spellings() {
  local form
  for form in "-n 3" "-np 3" "--np 3" "-n=3" "--np=3"; do
    # shellcheck disable=SC2086  # Word splitting of $form is intended.
    # shellcheck disable=SC2016
    run spelling $form -- sh -c 'echo "$STRATACL_WORLD_SIZE"'
    if [[ $rc -eq 0 && $(tr '\n' ' ' <"$TEST_DIR/spelling.out") == "3 3 3 " ]]; then
      pass "options: '$form' starts 3 ranks"
    else
      fail "options: '$form' gave exit $rc and output '$(tr '\n' ' ' <"$TEST_DIR/spelling.out")'"
    fi
  done
  run usage_none
  expect_rc usage_none 2
  run usage_zero -n 0 true
  expect_rc usage_zero 2
  run usage_big -n 1025 true
  expect_rc usage_big 2
  run usage_grace -n 1 --grace -1 true
  expect_rc usage_grace 2
  run help --help
  expect_rc help 0
  expect_line help "$TEST_DIR/help.out" '^Usage: stratarun' "--help prints the usage"
}

test_success() {
  run success -n 4 true
  expect_rc success 0
  if [[ -s $TEST_DIR/success.err ]]; then
    fail "success: unexpected stderr output: $(<"$TEST_DIR/success.err")"
  else
    pass "success: nothing printed on stderr"
  fi
}

test_exit_status() {
  # shellcheck disable=SC2016
  run exit3 -n 3 --grace 20 sh -c 'if [ "$STRATACL_RANK" = 1 ]; then exit 3; fi; exit 0'
  expect_rc exit3 3
  expect_line exit3 "$TEST_DIR/exit3.err" '^stratarun: rank 1 \(pid [0-9]+\) exited with status 3$' \
    "names the failing rank"
  local count
  count=$(count_matching "$TEST_DIR/exit3.err" 'exited with status|was killed by signal')
  if [[ $count == 1 ]]; then
    pass "exit3: exactly one failure line"
  else
    fail "exit3: expected one failure line, got $count"
  fi
}

test_killed_rank() {
  # shellcheck disable=SC2016
  run kill9 -n 2 --grace 20 sh -c '
    if [ "$STRATACL_RANK" = 0 ]; then echo $$ > "$SR_TEST_DIR/kill9.pid"; kill -9 $$; fi
    exit 0'
  expect_rc kill9 137
  local pid
  pid=$(cat "$TEST_DIR/kill9.pid" 2>/dev/null)
  expect_line kill9 "$TEST_DIR/kill9.err" \
    "^stratarun: rank 0 \\(pid ${pid:-[0-9]+}\\) was killed by signal KILL \\(9\\)$" \
    "names rank 0, its pid and signal KILL"
}

test_grace_period() {
  # Rank 2 fails; rank 0 exits by itself within the grace period; rank 1 hangs and must be
  # terminated once the grace period is over.
  local grace=1.5
  # shellcheck disable=SC2016
  run grace -n 3 --grace "$grace" sh -c '
    case $STRATACL_RANK in
      0) sleep 0.1; exit 0 ;;
      1) echo $$ > "$SR_TEST_DIR/grace.pid"; exec sleep 1000 ;;
      2) exit 5 ;;
    esac'
  expect_rc grace 5
  expect_line grace "$TEST_DIR/grace.err" '^stratarun: rank 2 \(pid [0-9]+\) exited with status 5$' \
    "names the failing rank 2"
  expect_line grace "$TEST_DIR/grace.err" '^stratarun: terminating rank 1 \(pid [0-9]+\)$' \
    "terminates the hung rank 1"
  if (($(count_matching "$TEST_DIR/grace.err" 'terminating rank 0') > 0)); then
    fail "grace: rank 0 exited on its own but was reported as terminated"
  fi
  if ((elapsed_ms >= 1400 && elapsed_ms < 4500)); then
    pass "grace: took ${elapsed_ms} ms (grace ${grace} s, limit grace+3 s)"
  else
    fail "grace: took ${elapsed_ms} ms, expected between the grace period and grace+3 s"
  fi
  local pid
  pid=$(cat "$TEST_DIR/grace.pid" 2>/dev/null)
  if [[ -n $pid ]] && alive "$pid"; then fail "grace: rank 1 (pid $pid) is still alive"; fi
}

test_timeout() {
  # Rank 0 finishes early; rank 1 hangs; rank 2 ignores SIGTERM and needs the SIGKILL.
  # shellcheck disable=SC2016
  run timeout -n 3 --timeout 1.5 sh -c '
    case $STRATACL_RANK in
      0) exit 0 ;;
      1) exec sleep 1000 ;;
      2) echo $$ > "$SR_TEST_DIR/timeout.pid"; trap "" TERM; exec sleep 1000 ;;
    esac'
  expect_rc timeout 124
  expect_line timeout "$TEST_DIR/timeout.err" \
    '^stratarun: timeout after 1\.5 s; ranks still running: 1,2$' "lists the hung ranks"
  # 1.5 s timeout + 2 s before SIGKILL, plus margin.
  if ((elapsed_ms >= 1400 && elapsed_ms < 7000)); then
    pass "timeout: took ${elapsed_ms} ms"
  else
    fail "timeout: took ${elapsed_ms} ms, expected about 3500"
  fi
  local pid
  pid=$(cat "$TEST_DIR/timeout.pid" 2>/dev/null)
  if [[ -n $pid ]] && alive "$pid"; then fail "timeout: TERM-ignoring rank (pid $pid) survived"; fi
}

test_signal_forwarding() {
  # Each rank records the SIGTERM it receives and exits 0, so stratarun exits 0. The ranks wait
  # in short foreground sleeps (the trap runs once the current one ends): killing a background
  # `sleep` from the trap races with dash still setting that child up, and could leave it behind.
  # shellcheck disable=SC2016
  "$SR" -n 2 sh -c '
    trap "echo TERM > \"\$SR_TEST_DIR/term.\$STRATACL_RANK\"; exit 0" TERM
    : > "$SR_TEST_DIR/ready.$STRATACL_RANK"
    while :; do sleep 0.1; done' >"$TEST_DIR/sigterm.out" 2>"$TEST_DIR/sigterm.err" &
  local pid=$!
  if ! wait_until 20 test -e "$TEST_DIR/ready.0" -a -e "$TEST_DIR/ready.1"; then
    fail "sigterm: ranks did not start"
  fi
  kill -TERM "$pid"
  if ! wait_until 20 alive_not "$pid"; then
    fail "sigterm: stratarun did not exit after SIGTERM"
    kill -KILL "$pid"
  fi
  wait "$pid"
  rc=$?
  expect_rc sigterm 0
  local rank
  for rank in 0 1; do
    if [[ $(cat "$TEST_DIR/term.$rank" 2>/dev/null) == TERM ]]; then
      pass "sigterm: rank $rank received the forwarded SIGTERM"
    else
      fail "sigterm: rank $rank did not receive SIGTERM"
    fi
  done
}
alive_not() { ! alive "$1"; }

test_parent_death() {
  # SIGKILL cannot be forwarded; PR_SET_PDEATHSIG must take the ranks down anyway.
  # shellcheck disable=SC2016
  "$SR" -n 2 sh -c 'echo $$ > "$SR_TEST_DIR/orphan.$STRATACL_RANK"; exec sleep 1000' \
    >/dev/null 2>&1 &
  local pid=$!
  if ! wait_until 20 test -s "$TEST_DIR/orphan.0" -a -s "$TEST_DIR/orphan.1"; then
    fail "pdeathsig: ranks did not start"
  fi
  kill -KILL "$pid"
  wait "$pid" 2>/dev/null
  local rank rank_pid
  for rank in 0 1; do
    rank_pid=$(cat "$TEST_DIR/orphan.$rank" 2>/dev/null)
    if [[ -n $rank_pid ]] && wait_until 10 alive_not "$rank_pid"; then
      pass "pdeathsig: rank $rank died with the killed launcher"
    else
      fail "pdeathsig: rank $rank (pid $rank_pid) outlived the killed launcher"
      [[ -n $rank_pid ]] && kill -KILL "$rank_pid" 2>/dev/null
    fi
  done
}

test_tag_output() {
  # shellcheck disable=SC2016
  run tag -n 2 --tag-output sh -c '
    i=0
    while [ $i -lt 200 ]; do
      echo "out $STRATACL_RANK $i xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
      i=$((i + 1))
    done
    echo "err $STRATACL_RANK" >&2
    printf "partial $STRATACL_RANK"
    echo "${STRATACL_ROOT_FD-}" > "$SR_TEST_DIR/tag.rootfd.$STRATACL_RANK"
    exec ls -l /proc/self/fd > "$SR_TEST_DIR/tag.fds.$STRATACL_RANK"'
  expect_rc tag 0
  local rank fds root want
  for rank in 0 1; do
    fds=$(inherited_fds "$TEST_DIR/tag.fds.$rank")
    root=$(<"$TEST_DIR/tag.rootfd.$rank")
    want=$(expected_fds ${root:+"$root"})
    if [[ $fds == "$want" ]]; then
      pass "tag-output: rank $rank holds no other rank's pipes"
    else
      fail "tag-output: rank $rank has fds '$fds', expected '$want' (leaked pipe?)"
    fi
  done

  # Every stdout line is "[R] " + a whole line of rank R, in rank R's order.
  local line bad=0 shown=0 next0=0 next1=0 partial0=no partial1=no
  while IFS= read -r line; do
    if [[ $line =~ ^\[([01])\]\ out\ ([01])\ ([0-9]+)\ x+$ && ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" ]]; then
      local r=${BASH_REMATCH[1]} n=${BASH_REMATCH[3]} next_var=next${BASH_REMATCH[1]}
      if ((n != ${!next_var})); then
        bad=1
        ((shown++ < 5)) && echo "    rank $r line $n out of order (expected ${!next_var})" >&2
      fi
      printf -v "$next_var" '%d' $((n + 1))
    elif [[ $line =~ ^\[([01])\]\ partial\ ([01])$ && ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" ]]; then
      printf -v "partial${BASH_REMATCH[1]}" yes
    else
      bad=1
      ((shown++ < 5)) && echo "    unexpected stdout line: '${line:0:100}'" >&2
    fi
  done <"$TEST_DIR/tag.out"
  if ((bad == 0 && next0 == 200 && next1 == 200)); then
    pass "tag-output: 400 stdout lines intact, prefixed and in order"
  else
    fail "tag-output: stdout lines garbled or missing (rank 0: $next0, rank 1: $next1 of 200)"
  fi
  if [[ $partial0 == yes && $partial1 == yes ]]; then
    pass "tag-output: unterminated last lines flushed with their prefix"
  else
    fail "tag-output: unterminated last line lost (rank 0: $partial0, rank 1: $partial1)"
  fi
  expect_line tag "$TEST_DIR/tag.err" '^\[0\] err 0$' "rank 0's stderr is prefixed"
  expect_line tag "$TEST_DIR/tag.err" '^\[1\] err 1$' "rank 1's stderr is prefixed"
  if (($(count_matching "$TEST_DIR/tag.err" '^\[[01]\] err [01]$') != 2)); then
    fail "tag-output: unexpected stderr lines: $(<"$TEST_DIR/tag.err")"
  fi
}

test_exec_failure() {
  run exec_path -n 2 /nonexistent/stratarun-test-program
  expect_rc exec_path 127
  expect_line exec_path "$TEST_DIR/exec_path.err" \
    '^stratarun: rank [01]: cannot execute /nonexistent/stratarun-test-program: No such file or directory$' \
    "explains the exec failure"
  run exec_search -n 1 stratarun-test-program-not-in-path
  expect_rc exec_search 127
  expect_line exec_search "$TEST_DIR/exec_search.err" \
    '^stratarun: rank 0: cannot execute stratarun-test-program-not-in-path: ' \
    "explains the failed PATH search"
}

start=$(now_ms)
test_environment
test_option_spellings
test_success
# --bind-to: its own file, sharing the helpers above.
# shellcheck source=test_stratarun_bind.sh
source "$(dirname "${BASH_SOURCE[0]}")/test_stratarun_bind.sh"

test_exit_status
test_killed_rank
test_grace_period
test_timeout
test_signal_forwarding
test_parent_death
test_tag_output
test_exec_failure
test_bind_to
echo "stratarun tests took $(($(now_ms) - start)) ms"

if ((failures > 0)); then
  echo "$failures stratarun check(s) FAILED" >&2
  exit 1
fi
echo "all stratarun checks passed"
