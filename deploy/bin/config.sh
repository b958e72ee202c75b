# shellcheck shell=bash disable=SC2034  # its variables are used by the scripts sourcing it
# Shared by the scripts in deploy/bin (sourced, not run): where Weir, its configuration,
# its logs and its pid files are, and which Python runs it.
#
#   WEIR_CONF_DIR  directory of weir-conf.yaml         (default: <weir>/deploy/conf)
#   WEIR_LOG_DIR   log directory                        (else env.log.dir, else <weir>/log)
#   WEIR_PID_DIR   pid file directory                   (else env.pid.dir, else /tmp)
#   WEIR_PYTHON    interpreter with Weir installed      (else <weir>/.venv/bin/python,
#                                                        else python3)
# As everywhere in Weir, the environment wins over the configuration file.

WEIR_BIN_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WEIR_HOME=$(cd "$WEIR_BIN_DIR/../.." && pwd)
WEIR_CONF_DIR=${WEIR_CONF_DIR:-$WEIR_HOME/deploy/conf}
WEIR_CONF_FILE=$WEIR_CONF_DIR/weir-conf.yaml
export WEIR_CONF_DIR

# read_config KEY DEFAULT: the value of a flat `KEY: value` line of weir-conf.yaml (the
# last one wins, as in YAML), without quotes or a trailing comment; DEFAULT when the
# key is absent or empty. The master process validates the whole file; this only reads
# (a file that is not text reads as empty here, -I, and the master says what is wrong).
read_config() {
    local key=$1 default=$2 value=""
    if [[ -f $WEIR_CONF_FILE ]]; then
        value=$(grep -I -E "^[[:space:]]*${key//./\\.}[[:space:]]*:" "$WEIR_CONF_FILE" \
            | tail -n 1 \
            | sed -E -e 's/^[^:]*:[[:space:]]*//' -e 's/[[:space:]]+#.*$//' \
                -e 's/[[:space:]]+$//' -e "s/^\"(.*)\"\$/\\1/" -e "s/^'(.*)'\$/\\1/" \
            || true)
    fi
    printf '%s\n' "${value:-$default}"
}

if [[ -z ${WEIR_PYTHON:-} ]]; then
    if [[ -x $WEIR_HOME/.venv/bin/python ]]; then
        WEIR_PYTHON=$WEIR_HOME/.venv/bin/python
    else
        WEIR_PYTHON=python3
    fi
fi
# The services are the packages weir.dispatcher, weir.taskmanager, ... of an installed Weir
# (the checkout's folders are mapped beneath `weir` by the install): say so if it is not.
if ! "$WEIR_PYTHON" -c 'import importlib.util as u, sys; sys.exit(u.find_spec("weir.dispatcher") is None)' 2>/dev/null; then
    echo "Weir is not installed for $WEIR_PYTHON: run 'make setup' in $WEIR_HOME, or" \
        "'pip install $WEIR_HOME', or point WEIR_PYTHON at an interpreter that has it" >&2
    exit 1
fi

WEIR_LOG_DIR=${WEIR_LOG_DIR:-$(read_config env.log.dir "$WEIR_HOME/log")}
WEIR_PID_DIR=${WEIR_PID_DIR:-$(read_config env.pid.dir /tmp)}
WEIR_MASTER_PID_FILE=$WEIR_PID_DIR/weir-master.pid
WEIR_MASTER_LOG_FILE=$WEIR_LOG_DIR/weir-master-$(hostname).log

# The first line of the master's stdout once its Dispatcher answers (master_process.py).
WEIR_READY_PREFIX="Weir master ready: Dispatcher at "
# What a master under high availability prints while it waits as a standby (ha_master.py).
WEIR_STANDBY_PREFIX="Weir master standby: "

# is_running PID: the process exists (and is not a zombie).
is_running() {
    local state
    state=$(ps -o stat= -p "$1" 2>/dev/null || true)
    [[ -n $state && $state != Z* ]]
}

# is_weir_master PID: the process is a Weir master (guards against a reused pid).
is_weir_master() {
    ps -o args= -p "$1" 2>/dev/null | grep -q "weir.client.master_process"
}

# descendants PID: every process below PID, children first.
descendants() {
    local child
    for child in $(pgrep -P "$1" || true); do
        printf '%s\n' "$child"
        descendants "$child"
    done
}

log_tail() {
    local file=$1
    if [[ -f $file ]]; then
        echo "---- last lines of $file ----" >&2
        tail -n 30 "$file" >&2
        echo "----" >&2
    fi
}

# stop_leftovers PID TIMEOUT [OTHER_PID...]: once the master PID has exited, wait for
# the members of its session (start-cluster.sh makes it a session leader) and the other
# given processes to exit, and SIGKILL, with a warning, those still there after TIMEOUT
# seconds. The Spark driver JVM exits when it sees the master's pipe close; its Python
# workers follow it.
stop_leftovers() {
    local pid=$1 timeout_s=$2
    shift 2
    local -a others=("$@") leftovers
    local deadline=$((SECONDS + timeout_s))
    while true; do
        mapfile -t leftovers < <(
            for p in "${others[@]}" $(pgrep -s "$pid" || true); do
                if [[ $p != "$pid" ]] && is_running "$p"; then
                    printf '%s\n' "$p"
                fi
            done | sort -u
        )
        if ((${#leftovers[@]} == 0)); then
            return 0
        fi
        if ((SECONDS >= deadline)); then
            echo "warning: processes of the Weir master still running after" \
                "${timeout_s} s (${leftovers[*]}); killing them." >&2
            kill -KILL "${leftovers[@]}" 2>/dev/null || true
            return 0
        fi
        sleep 0.2  # polling interval
    done
}
