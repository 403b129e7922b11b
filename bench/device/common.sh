# Sourced by the device call scripts: run() runs one named check with a timeout inside
# the call's DEADLINE, logs it to $L/NAME.log, prints its exit status and tail, and returns
# that status (124 when skipped for want of time).
t0=$SECONDS
left() { echo $((DEADLINE - (SECONDS - t0))); }
run() { local name=$1 tmo=$2; shift 2; local l=$(left); [ $l -lt 10 ] && { echo "$name: skipped (no time)" | tee -a $L/summary.txt; return 124; }
  [ $tmo -gt $l ] && tmo=$l
  timeout $tmo "$@" > $L/$name.log 2>&1; local rc=$?
  echo "$name: exit $rc at $((SECONDS-t0)) s" | tee -a $L/summary.txt; tail -n ${TAILN:-6} $L/$name.log | cut -c1-260; return $rc; }
