#!/usr/bin/env bash
# Start a Weir master (Dispatcher, ResourceManager, JobMasters) in the background. Its
# ResourceManager leases TaskManagers from the Spark master named by spark.master.
#
#   start-cluster.sh [-n N | --taskmanagers N]
#   start-cluster.sh --standby [--port P]
#
#   -n, --taskmanagers N   lease N TaskManagers at start and keep them
#                          (resourcemanager.taskmanager.min for this run)
#   --standby              start one more master beside the running one; it waits as a
#                          standby and takes over when the leader dies (needs
#                          high-availability.type zookeeper or kubernetes); --port its
#                          Dispatcher port (default: any free one)
#
# With high availability, a `masters` file beside weir-conf.yaml (one host:port a line,
# as Flink's conf/masters; hosts of this machine only) starts a master for each line:
# the first as above, the others as standbys.
#
# Environment: WEIR_CONF_DIR, WEIR_LOG_DIR, WEIR_PID_DIR, WEIR_PYTHON (see config.sh);
# WEIR_START_TIMEOUT seconds to wait for the Dispatcher (default 120: a SparkSession
# starts in about 5 s locally, more against a remote cluster).
set -euo pipefail

# shellcheck source=SCRIPTDIR/config.sh
source "$(dirname "${BASH_SOURCE[0]}")/config.sh"

usage() {
    sed -n '4,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

taskmanagers=""
masters=()
standby=""
port=""
host=""
while [[ $# -gt 0 ]]; do
    case $1 in
        -n | --taskmanagers)
            if [[ $# -lt 2 ]]; then
                echo "error: $1 needs a number of TaskManagers" >&2
                exit 2
            fi
            taskmanagers=$2
            shift 2
            ;;
        --taskmanagers=*)
            taskmanagers=${1#*=}
            shift
            ;;
        --standby)
            standby=1
            shift
            ;;
        --port | --host)
            if [[ $# -lt 2 ]]; then
                echo "error: $1 needs a value" >&2
                exit 2
            fi
            if [[ $1 == --port ]]; then port=$2; else host=$2; fi
            shift 2
            ;;
        -h | --help)
            usage
            exit 0
            ;;
        *)
            echo "error: unknown argument '$1'" >&2
            usage >&2
            exit 2
            ;;
    esac
done
if [[ -n $taskmanagers && ! $taskmanagers =~ ^[0-9]+$ ]]; then
    echo "error: the number of TaskManagers must be a whole number, got '$taskmanagers'" >&2
    exit 2
fi

if [[ ! -f $WEIR_CONF_FILE ]]; then
    echo "error: no configuration file $WEIR_CONF_FILE (set WEIR_CONF_DIR)" >&2
    exit 1
fi

mkdir -p "$WEIR_LOG_DIR" "$WEIR_PID_DIR"
WEIR_LOG_DIR=$(cd "$WEIR_LOG_DIR" && pwd)  # TaskManagers run in other directories

ha_type=$(read_config high-availability.type none)
ha_type=${ha_type,,}  # Flink's values are case-insensitive
masters_file=$WEIR_CONF_DIR/masters
if [[ -n $standby && $ha_type != zookeeper && $ha_type != kubernetes ]]; then
    echo "error: a standby master needs high-availability.type: zookeeper or kubernetes in" \
        "$WEIR_CONF_FILE (it is '$ha_type')" >&2
    exit 1
fi
if [[ -n $standby ]]; then
    # pid and log file of the next free standby slot
    i=1
    while [[ -f $WEIR_PID_DIR/weir-master-standby-$i.pid ]] \
        && is_running "$(<"$WEIR_PID_DIR/weir-master-standby-$i.pid")"; do
        i=$((i + 1))
    done
    WEIR_MASTER_PID_FILE=$WEIR_PID_DIR/weir-master-standby-$i.pid
    WEIR_MASTER_LOG_FILE=${WEIR_MASTER_LOG_FILE%.log}-standby-$i.log
    port=${port:-0}
elif [[ $ha_type != none && -f $masters_file ]]; then
    mapfile -t masters < <(grep -vE '^[[:space:]]*(#|$)' "$masters_file" | sed -E 's/[[:space:]]+//g')
    if ((${#masters[@]} > 0)); then
        host=${host:-${masters[0]%:*}}
        port=${port:-${masters[0]##*:}}
    fi
fi

if [[ -f $WEIR_MASTER_PID_FILE ]]; then
    old_pid=$(<"$WEIR_MASTER_PID_FILE")
    if [[ $old_pid =~ ^[0-9]+$ ]] && is_running "$old_pid" && is_weir_master "$old_pid"; then
        echo "error: a Weir master is already running (pid $old_pid, pid file" \
            "$WEIR_MASTER_PID_FILE); stop it first with stop-cluster.sh" >&2
        exit 1
    fi
    echo "Removing stale pid file $WEIR_MASTER_PID_FILE." >&2
    rm -f "$WEIR_MASTER_PID_FILE"
fi

# Keep the last five logs, as weir-master-<host>.log.1 ... .5.
for i in 4 3 2 1; do
    if [[ -f $WEIR_MASTER_LOG_FILE.$i ]]; then
        mv -f "$WEIR_MASTER_LOG_FILE.$i" "$WEIR_MASTER_LOG_FILE.$((i + 1))"
    fi
done
if [[ -f $WEIR_MASTER_LOG_FILE ]]; then
    mv -f "$WEIR_MASTER_LOG_FILE" "$WEIR_MASTER_LOG_FILE.1"
fi

# TaskManagers keep their taskmanager.log and taskmanager.out beside the master's log,
# which the REST API serves as the JobManager's (web.log.path, as Flink's).
master_args=(--config-dir "$WEIR_CONF_DIR" --set "env.log.dir=$WEIR_LOG_DIR"
    --set "web.log.path=$WEIR_MASTER_LOG_FILE")
if [[ -n $taskmanagers ]]; then
    master_args+=(--set "resourcemanager.taskmanager.min=$taskmanagers")
fi
if [[ -n $host ]]; then
    master_args+=(--host "$host")
fi
if [[ -n $port ]]; then
    master_args+=(--port "$port")
fi

# A session of its own: the master, the Spark driver JVM that pyspark starts and that
# JVM's Python workers can be found (and stopped) together by stop-cluster.sh, and a
# hang-up of this terminal does not reach them. The job is not a process-group leader
# (no job control in a script), so setsid execs in place and $! is the master's pid.
launcher=(nohup)
if command -v setsid >/dev/null 2>&1; then
    launcher=(setsid nohup)
fi
# Created here: the background job opens it asynchronously, and the wait below reads it.
: >"$WEIR_MASTER_LOG_FILE"
"${launcher[@]}" "$WEIR_PYTHON" -m weir.client.master_process "${master_args[@]}" \
    >"$WEIR_MASTER_LOG_FILE" 2>&1 </dev/null &
pid=$!
echo "$pid" >"$WEIR_MASTER_PID_FILE"
echo "Starting the Weir master (pid $pid) with $WEIR_CONF_FILE."

# answers HOST:PORT: something accepts TCP connections there.
answers() {
    local host=${1%:*} port=${1##*:}
    (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null
}

timeout_s=${WEIR_START_TIMEOUT:-120}
deadline=$((SECONDS + timeout_s))
address=""
while true; do
    if ! is_running "$pid"; then
        wait "$pid" 2>/dev/null && status=0 || status=$?
        echo "error: the Weir master exited during startup (exit code $status)." >&2
        log_tail "$WEIR_MASTER_LOG_FILE"
        stop_leftovers "$pid" "${WEIR_LEFTOVER_TIMEOUT:-15}"
        rm -f "$WEIR_MASTER_PID_FILE"
        exit 1
    fi
    if [[ -z $address ]]; then
        address=$(sed -n "s/^${WEIR_READY_PREFIX}//p" "$WEIR_MASTER_LOG_FILE" | head -n 1)
    fi
    if [[ -n $address ]] && answers "$address"; then
        break
    fi
    if [[ -n $standby ]] && grep -q "^${WEIR_STANDBY_PREFIX}" "$WEIR_MASTER_LOG_FILE"; then
        echo "Weir master started as a standby (pid $pid): it takes over when the leader" \
            "dies. Log: $WEIR_MASTER_LOG_FILE"
        exit 0
    fi
    if ((SECONDS >= deadline)); then
        echo "error: the Weir master did not answer within ${timeout_s} s" \
            "(WEIR_START_TIMEOUT); stopping it." >&2
        log_tail "$WEIR_MASTER_LOG_FILE"
        "$WEIR_BIN_DIR/stop-cluster.sh" >&2 || true
        exit 1
    fi
    sleep 0.2  # polling interval, not a synchronisation: the loop checks the condition
done

echo "Weir master started: Dispatcher at $address."
if [[ -z $standby && $ha_type != none && ${#masters[@]} -gt 1 ]]; then
    for entry in "${masters[@]:1}"; do
        "$WEIR_BIN_DIR/start-cluster.sh" --standby --host "${entry%:*}" --port "${entry##*:}"
    done
fi
echo "Logs: $WEIR_MASTER_LOG_FILE"
echo "Stop it with $WEIR_BIN_DIR/stop-cluster.sh."
