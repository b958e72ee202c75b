#!/usr/bin/env bash
# Stop the Weir master started by start-cluster.sh: SIGTERM (the master stops its jobs,
# its TaskManagers and its SparkSession), then, past WEIR_STOP_TIMEOUT seconds, SIGKILL.
# Leaves no process of the master's behind: the Spark driver JVM that pyspark started
# and the JVM's Python workers go too.
#
# Environment: WEIR_CONF_DIR, WEIR_PID_DIR (see config.sh); WEIR_STOP_TIMEOUT (default
# 90 s: the ResourceManager gives TaskManagers 10 s to stop and cancelled leases 30 s to
# end, and stopping Spark takes a few seconds more).
set -euo pipefail

# shellcheck source=SCRIPTDIR/config.sh
source "$(dirname "${BASH_SOURCE[0]}")/config.sh"

stop_timeout_s=${WEIR_STOP_TIMEOUT:-90}
# How long the master's remaining processes (Spark driver JVM, its Python workers) get
# to exit after the master before they are killed (see stop_leftovers in config.sh).
leftover_timeout_s=${WEIR_LEFTOVER_TIMEOUT:-15}

# stop_master PID_FILE LABEL: stop the master whose pid the file holds.
stop_master() {
    local pid_file=$1 label=$2 pid deadline
    local -a family
    if [[ ! -f $pid_file ]]; then
        echo "No Weir master to stop (no pid file $pid_file)."
        return 0
    fi
    pid=$(<"$pid_file")
    if [[ ! $pid =~ ^[0-9]+$ ]]; then
        echo "warning: $pid_file holds no pid ('$pid'); removing it." >&2
        rm -f "$pid_file"
        return 0
    fi
    if ! is_running "$pid"; then
        echo "No Weir master running (pid $pid is gone); removing $pid_file."
        stop_leftovers "$pid" "$leftover_timeout_s"
        rm -f "$pid_file"
        return 0
    fi
    if ! is_weir_master "$pid"; then
        echo "warning: pid $pid is not a Weir master (a reused pid?); not stopping it," \
            "removing $pid_file." >&2
        rm -f "$pid_file"
        return 0
    fi

    # Recorded before the signal: once the master exits its children are re-parented and
    # no longer found below it.
    mapfile -t family < <(descendants "$pid")

    echo "Stopping the Weir master$label (pid $pid)."
    kill -TERM "$pid" 2>/dev/null || true
    deadline=$((SECONDS + stop_timeout_s))
    while is_running "$pid"; do
        if ((SECONDS >= deadline)); then
            echo "warning: the Weir master (pid $pid) did not stop within ${stop_timeout_s} s" \
                "(WEIR_STOP_TIMEOUT); killing it." >&2
            kill -KILL "$pid" 2>/dev/null || true
            break
        fi
        sleep 0.2  # polling interval
    done

    stop_leftovers "$pid" "$leftover_timeout_s" "${family[@]}"

    rm -f "$pid_file"
    echo "Weir master$label stopped."
}

# Standbys first: stopping the leader first would only hand its jobs to one of them.
for standby_pid_file in "$WEIR_PID_DIR"/weir-master-standby-*.pid; do
    if [[ -f $standby_pid_file ]]; then
        stop_master "$standby_pid_file" " (standby)"
    fi
done
stop_master "$WEIR_MASTER_PID_FILE" ""
