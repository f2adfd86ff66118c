# shellcheck shell=bash
# The reporting of the scripts that test packages (test-packages.sh,
# test-rpm.sh): a line per check, "ok" or "FAIL", and a closing line
# "NAME: N passed, M failed". The caller sets LOGS (where step logs go)
# and CHECKS_NAME, and may define step_failed (what a failed step does
# after its log is shown; by default: the summary, then exit 1).

passed=0 failed=0 step_no=0

ok() { passed=$((passed + 1)); printf 'ok   %s\n' "$1"; }
not_ok() { failed=$((failed + 1)); printf 'FAIL %s\n' "$1"; }

summary() {
    printf '\n%s: %d passed, %d failed\n' "$CHECKS_NAME" "$passed" "$failed"
}

# check NAME CMD...: an assertion; its output is shown when it fails.
check() {
    local name=$1 out
    shift
    if out=$("$@" 2>&1); then
        ok "$name"
    else
        not_ok "$name"
        sed 's/^/     | /' <<<"$out" | tail -n 30
    fi
}

# step NAME CMD...: an action the checks after it rely on; stops the test
# when it fails, with its log.
step() {
    local name=$1 log
    shift
    step_no=$((step_no + 1))
    log=$LOGS/$(printf '%02d' "$step_no")-${name//[^A-Za-z0-9]/_}.log
    if "$@" >"$log" 2>&1; then
        ok "$name"
    else
        not_ok "$name (log: $log)"
        sed 's/^/     | /' "$log" | tail -n 40
        if declare -F step_failed >/dev/null; then step_failed; fi
        summary
        exit 1
    fi
}
