#!/usr/bin/env bash
# Benchmark (not a test): does a SIGKILL at any instant of launch,
# daemon-restart or cleanup orphan a Band agent or room?
#
# Builds a fake world (fake Band, fake sbx, stand-in agent; loopback only,
# a canary key), then N times (200 by default, a third per phase, two busy
# loops beside it for load): runs `band-smoke phase <launch|daemon-restart|
# cleanup>`, SIGKILLs it at a random instant of that phase's measured span
# (every 4th launch and daemon-restart kill instead lands in the instant
# the room exists on Band and its create's answer has not come back),
# checks that `band-smoke status` still reads the state, runs the next step
# (the same phase again, to its end), and counts what the fake Band holds
# that the run state does not record: leaked agents and rooms. At the end
# one last cleanup must leave the fake Band empty. Prints numbers; exits 1
# on any leak or unreadable state.
#
#   scripts/bench-kill.sh [build-dir]     N=200 by default
set -uo pipefail

build=$(cd "${1:-build}" && pwd) || { echo "no build folder" >&2; exit 1; }
n=${N:-200}
bin=$build/band-smoke fake_band=$build/tests/bin/fake-band fake_sbx=$build/tests/fake-sbx-bin
for f in "$bin" "$fake_band" "$fake_sbx/sbx" "$build/tests/bin/fake-agent"; do
  [ -x "$f" ] || { echo "bench-kill: $f is not built" >&2; exit 1; }
done
command -v python3 >/dev/null || { echo "bench-kill: python3 is needed to read the state" >&2; exit 1; }

root=$(mktemp -d "${TMPDIR:-/tmp}/band-smoke-kill-XXXXXX")
mkdir -m 700 "$root/state" "$root/ws" "$root/sbx" "$root/secrets"
fb_pid="" busy=()

# Stops only what this script started: the busy loops, the agent launcher
# the state records, the fake sbx daemon, the fake Band.
finish() {
  for p in "${busy[@]}"; do kill "$p" 2>/dev/null; done
  agent_pid=$(state_field agent_process.pid 2>/dev/null)
  [ -n "${agent_pid:-}" ] && [ "$agent_pid" -gt 1 ] && kill -- "-$agent_pid" 2>/dev/null
  sbx daemon stop >/dev/null 2>&1
  [ -n "$fb_pid" ] && kill "$fb_pid" 2>/dev/null && wait "$fb_pid" 2>/dev/null
  if [ -n "${KEEP:-}" ]; then echo "bench-kill: kept $root"; else rm -rf "$root"; fi
}
trap finish EXIT

key=canary-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
printf '%s\n' "$key" >"$root/secrets/user.key"
"$fake_band" --user-key-file "$root/secrets/user.key" --log "$root/fake-band.log" \
  >"$root/fake-band.out" 2>&1 &
fb_pid=$!
for _ in $(seq 100); do grep -q listening "$root/fake-band.out" && break; sleep 0.05; done
port=$(sed -n 's/^fake-band listening 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$root/fake-band.out")
[ -n "$port" ] || { echo "bench-kill: the fake Band did not start" >&2; exit 1; }
api=http://127.0.0.1:$port
printf 'BAND_REST_URL=%s\nBAND_WS_URL=ws://127.0.0.1:%s/api/v1/socket/websocket\nBAND_API_KEY_USER=%s\n' \
  "$api" "$port" "$key" >"$root/secrets/env.test"
rm -f "$root/secrets/user.key"

# The children's whole environment: never the operator's staging settings.
export PATH=$fake_sbx:/usr/local/bin:/usr/bin:/bin HOME=$root TMPDIR=$root LANG=C.UTF-8 \
  SMOKE_STATE_DIR=$root/state SMOKE_ENV_FILE=$root/secrets/env.test \
  SBX_SANDBOX=kill-$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n') SBX_WORKSPACE=$root/ws \
  SBX_BIN=$fake_sbx/sbx E2E_TIMEOUT=20 FAKE_AGENT_KEEPALIVE_S=2 FAKE_SBX_STATE=$root/sbx \
  FAKE_UV_AGENT=$build/tests/bin/fake-agent
unset SMOKE_TIME_SCALE BAND_BASE_URL BAND_REST_URL BAND_WS_URL BAND_API_KEY_USER
sbx policy init balanced >/dev/null 2>&1 || { echo "bench-kill: fake sbx policy init failed" >&2; exit 1; }

# One field of state.json (dotted path), "" when absent.
state_field() {
  python3 - "$root/state/state.json" "$1" <<'EOF' 2>/dev/null
import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v.get(k, "") if isinstance(v, dict) else ""
print(v if v is not None else "")
EOF
}

phase() { "$bin" phase "$@" >>"$root/phases.log" 2>&1; }

# A next step that did not pass: its FAILED / ERROR / SKIPPED line, counted.
next_step() {
  local before
  before=$(wc -l <"$root/phases.log" 2>/dev/null || echo 0)
  phase "$@" && return 0
  bad_steps=$((bad_steps + 1))
  tail -n +"$((before + 1))" "$root/phases.log" | grep -E '^(FAILED|ERROR|SKIPPED)' | head -1 |
    sed 's/ in [0-9.]* m\{0,1\}s:/:/' | cut -c1-150 >>"$root/bad-steps.txt"
  return 1
}

# What the fake holds beyond what the state records (an id, or a name or
# title saved before its create was answered, which the next reap finds):
# prints "<live agents> <live rooms> <leaked agents> <leaked rooms>".
leaks_now() {
  curl -s --max-time 5 "$api/_fake/stats" | python3 -c '
import json, sys
live = json.load(sys.stdin)
try:
    st = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    st = {}
ra = 1 if st.get("agent_id") or st.get("agent_name") else 0
rr = 1 if st.get("room_id") or st.get("room_title") else 0
a, r = live["live_agents"], live["live_rooms"]
print(a, r, max(0, a - ra), max(0, r - rr))' "$root/state/state.json"
}

leaked_agents=0 leaked_rooms=0 unreadable=0 killed=0 finished=0 bad_steps=0
count_leaks() {
  local a r la lr
  read -r a r la lr < <(leaks_now)
  leaked_agents=$((leaked_agents + la)) leaked_rooms=$((leaked_rooms + lr))
  [ "$la" -eq 0 ] && [ "$lr" -eq 0 ] ||
    echo "  leak after $1: $a agents and $r rooms live, $la and $lr not recorded" >&2
}

# Runs `phase <name> [--again]` and SIGKILLs it after a random part of
# span_us; then the status must read; then the next step runs to its end.
kill_one() {
  local name=$1 span_us=$2; shift 2
  "$bin" phase "$name" "$@" >>"$root/phases.log" 2>&1 &
  local pid=$! delay_us=$(( (RANDOM * 32768 + RANDOM) % span_us ))
  sleep "$(printf '%d.%06d' $((delay_us / 1000000)) $((delay_us % 1000000)))"
  kill -9 "$pid" 2>/dev/null && killed=$((killed + 1))
  wait "$pid" 2>/dev/null && finished=$((finished + 1))
  "$bin" status >/dev/null 2>&1 || unreadable=$((unreadable + 1))
  in_window
}

# The kill aimed at the window itself: the fake Band holds every answer a
# second, and the kill comes the moment its log shows the room made (it
# logs a request once handled, before the held answer goes out). Band has
# the room; band-smoke never hears of it.
aimed=0
kill_in_window() {
  local name=$1; shift
  local made
  made=$(grep -c "POST /api/v1/me/chats 201" "$root/fake-band.log")
  control '{"action":"delay","ms":1000}'
  "$bin" phase "$name" "$@" >>"$root/phases.log" 2>&1 &
  local pid=$!
  for _ in $(seq 1000); do
    [ "$(grep -c "POST /api/v1/me/chats 201" "$root/fake-band.log")" -gt "$made" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.01
  done
  kill -9 "$pid" 2>/dev/null && killed=$((killed + 1)) aimed=$((aimed + 1))
  wait "$pid" 2>/dev/null && finished=$((finished + 1))
  control '{"action":"delay","ms":0}'
  "$bin" status >/dev/null 2>&1 || unreadable=$((unreadable + 1))
  in_window
}

control() { curl -s --max-time 5 -o /dev/null -X POST -d "$1" "$api/_fake/control"; }

# A kill that landed inside a create's window: the name or title is saved,
# the id is not (what the next step must find by listing).
room_window=0 agent_window=0
in_window() {
  case "$(python3 -c '
import json, sys
try:
    st = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    st = {}
print(("r" if st.get("room_title") and not st.get("room_id") else "") +
      ("a" if st.get("agent_name") and not st.get("agent_id") else ""))' "$root/state/state.json")" in
    *r*a*|*a*r*) room_window=$((room_window + 1)) agent_window=$((agent_window + 1)) ;;
    *r*) room_window=$((room_window + 1)) ;;
    *a*) agent_window=$((agent_window + 1)) ;;
  esac
}

span_of() { # microseconds one uninterrupted run of a phase takes, and a bit more
  local t0=$(date +%s%N); phase "$@"; echo $(( ($(date +%s%N) - t0) / 1000 * 12 / 10 + 1000 ))
}

fresh_run() { phase start && phase preflight && phase sandbox; }

for _ in 1 2; do (while :; do :; done) & busy+=($!); done

t_start=$(date +%s)
per=$(( n / 3 )); n_launch=$((n - 2 * per)); n_daemon=$per; n_cleanup=$per

# launch: on a run past its sandbox; the next step is the launch again
fresh_run || { echo "bench-kill: cannot start a run" >&2; exit 1; }
span=$(span_of launch)
for i in $(seq "$n_launch"); do
  if [ $((i % 4)) -eq 0 ]; then kill_in_window launch --again; else kill_one launch "$span" --again; fi
  next_step launch --again
  count_leaks "launch kill $i"
done
launch_span=$span launch_s=$(( $(date +%s) - t_start ))

# daemon-restart: on a run past both checkpoints (the Wi-Fi cut and the
# sleep injected); the next step is the restart again. Each restart records
# a probe attempt, and a run holds at most 64: a fresh run every 25 kills.
reach_daemon_restart() {
  local seen
  seen=$(wc -l <"$root/state/agent.log" 2>/dev/null || echo 0)
  phase initial && phase wifi-checkpoint && sbx _fault net-cut 3 >/dev/null 2>&1
  for _ in $(seq 80); do
    tail -n +"$((seen + 1))" "$root/state/agent.log" | grep -q "WebSocket reconnected" && break
    sleep 0.25
  done
  phase after-wifi-reconnect && phase sleep-checkpoint && sbx _fault freeze 3 >/dev/null 2>&1
  sleep 3.5
  "$bin" confirm sleep-wake >>"$root/phases.log" 2>&1
  phase after-sleep-wake || echo "bench-kill: the run did not reach the daemon restart" >&2
}
reach_daemon_restart
span=$(span_of daemon-restart)
for i in $(seq "$n_daemon"); do
  if [ "$i" -gt 1 ] && [ $(((i - 1) % 25)) -eq 0 ]; then
    phase cleanup --again; fresh_run && phase launch && reach_daemon_restart
  fi
  if [ $((i % 4)) -eq 0 ]; then
    kill_in_window daemon-restart --again
  else
    kill_one daemon-restart "$span" --again
  fi
  next_step daemon-restart --again
  count_leaks "daemon-restart kill $i"
done
daemon_span=$span daemon_s=$(( $(date +%s) - t_start - launch_s ))

# cleanup: each on a fresh run with an agent and a room; the next step is
# the cleanup again, which ends the run with nothing left on Band
phase cleanup; fresh_run && phase launch
span=$(span_of cleanup)
for i in $(seq "$n_cleanup"); do
  fresh_run && phase launch || echo "bench-kill: could not prepare cleanup kill $i" >&2
  kill_one cleanup "$span"
  next_step cleanup --again
  count_leaks "cleanup kill $i"
done
cleanup_span=$span cleanup_s=$(( $(date +%s) - t_start - launch_s - daemon_s ))

phase cleanup --again
read -r final_agents final_rooms _ _ < <(leaks_now)
took=$(( $(date +%s) - t_start ))
echo "kill test: $n runs of band-smoke SIGKILLed at random instants under load (2 busy loops):"
echo "  launch $n_launch (span ${launch_span} us), daemon-restart $n_daemon (span ${daemon_span} us), cleanup $n_cleanup (span ${cleanup_span} us); $killed killed mid-run, $finished finished first"
echo "  kills inside a create's window (title or name saved, id not): $room_window rooms, $agent_window agents ($aimed kills aimed at the room create: every 4th of launch and daemon-restart)"
echo "  leaked after the next step: $leaked_agents agents, $leaked_rooms rooms; unreadable states: $unreadable"
echo "  after the final cleanup the fake Band holds $final_agents agents and $final_rooms rooms"
[ -s "$root/bad-steps.txt" ] && sort "$root/bad-steps.txt" | uniq -c | sort -rn | head -8 | sed 's/^/    /'
echo "  next steps that did not pass: $bad_steps (their lines above); ${took} s in all (launch ${launch_s} s, daemon-restart ${daemon_s} s with both checkpoints, cleanup ${cleanup_s} s)"
[ "$leaked_agents" -eq 0 ] && [ "$leaked_rooms" -eq 0 ] && [ "$unreadable" -eq 0 ] &&
  [ "$final_agents" -eq 0 ] && [ "$final_rooms" -eq 0 ]
