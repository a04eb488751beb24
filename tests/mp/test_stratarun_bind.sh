# Part of tests/mp/test_stratarun.sh (sourced; uses its run, expect_rc, pass and fail): the CPUs
# `stratarun --bind-to core` gives each rank.

# cpu_list LIST: expands a kernel CPU list ("0-2,5") into space-separated CPU numbers.
cpu_list() {
  local part parts out=()
  IFS=, read -ra parts <<<"$1"
  for part in "${parts[@]}"; do
    if [[ $part == *-* ]]; then
      out+=($(seq "${part%-*}" "${part#*-}"))
    else
      out+=("$part")
    fi
  done
  echo "${out[*]}"
}

# --bind-to core: each rank on its own share of the launcher's CPUs (L ranks over C CPUs: C/L
# each in CPU order where L <= C, CPU l mod C where L > C); without it, the launcher's own set.
test_bind_to() {
  local mine n rank want got
  read -ra mine <<<"$(cpu_list "$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)")"
  local C=${#mine[@]}
  for n in 1 2 3 5; do
    run "bind$n" -n "$n" --bind-to core sh -c \
      'awk "/^Cpus_allowed_list/ {print \$2}" /proc/self/status >"$SR_TEST_DIR/bind.$STRATACL_RANK"'
    expect_rc "bind$n" 0
    for ((rank = 0; rank < n; ++rank)); do
      if ((n > C)); then
        want=${mine[rank % C]}
      else
        want="${mine[*]:rank * C / n:(rank + 1) * C / n - rank * C / n}"
      fi
      got=$(cpu_list "$(<"$TEST_DIR/bind.$rank")")
      if [[ $got == "$want" ]]; then
        pass "bind-to core, $n ranks over $C CPUs: rank $rank on CPUs $got"
      else
        fail "bind-to core, $n ranks over $C CPUs: rank $rank on CPUs '$got', expected '$want'"
      fi
    done
  done
  run bindnone -n 2 sh -c \
    'awk "/^Cpus_allowed_list/ {print \$2}" /proc/self/status >"$SR_TEST_DIR/bind.$STRATACL_RANK"'
  expect_rc bindnone 0
  got=$(cpu_list "$(<"$TEST_DIR/bind.1")")
  if [[ $got == "${mine[*]}" ]]; then
    pass "without --bind-to, a rank keeps the launcher's CPUs ($got)"
  else
    fail "without --bind-to, rank 1 runs on CPUs '$got', the launcher on '${mine[*]}'"
  fi
  run bindbad -n 2 --bind-to socket true
  expect_rc bindbad 2
}
