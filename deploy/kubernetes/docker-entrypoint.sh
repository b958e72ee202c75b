#!/usr/bin/env bash
# The entry point of Weir's image (deploy/kubernetes/Dockerfile), run under tini:
#
#   master [--set KEY=VALUE ...]   a Weir master with $WEIR_CONF_DIR/weir-conf.yaml: Weir's
#                                  services and the Spark driver, which creates the
#                                  TaskManager pods (the chart's Deployment runs this)
#   executor                       what Spark's Kubernetes backend runs in each executor
#                                  (TaskManager) pod it creates: Spark's executor JVM,
#                                  configured through the SPARK_* variables Spark sets in
#                                  the pod; TaskManagers start in its Python workers
#   anything else                  run as given (weir, python, bash, ...)
set -euo pipefail

WEIR_CONF_DIR=${WEIR_CONF_DIR:-/opt/weir/conf}

# require NAME...: each variable must be set (Spark sets them in every executor pod).
require() {
    local name
    for name in "$@"; do
        if [[ -z ${!name:-} ]]; then
            echo "error: $name is not set: the executor command runs in pods that Spark's" \
                "driver creates, which set it" >&2
            exit 1
        fi
    done
}

case "${1:-}" in
    master)
        shift
        exec python -m weir.client.master_process --config-dir "$WEIR_CONF_DIR" "$@"
        ;;
    executor)
        shift
        require SPARK_HOME SPARK_DRIVER_URL SPARK_EXECUTOR_ID SPARK_EXECUTOR_CORES \
            SPARK_EXECUTOR_MEMORY SPARK_APPLICATION_ID SPARK_EXECUTOR_POD_IP \
            SPARK_RESOURCE_PROFILE_ID SPARK_EXECUTOR_POD_NAME
        # Spark hands the executor JVM its options as SPARK_JAVA_OPT_0, _1, ... in order.
        java_opts=()
        for ((i = 0; ; i++)); do
            name=SPARK_JAVA_OPT_$i
            [[ -n ${!name+set} ]] || break
            java_opts+=("${!name}")
        done
        # Spark's configuration directory (the ConfigMap it mounts), then Spark's jars.
        classpath="${SPARK_HOME}/jars/*"
        if [[ -n ${SPARK_CONF_DIR:-} ]]; then
            classpath="$SPARK_CONF_DIR:$classpath"
        fi
        if [[ -n ${SPARK_EXTRA_CLASSPATH:-} ]]; then
            classpath="$classpath:$SPARK_EXTRA_CLASSPATH"
        fi
        exec java "${java_opts[@]}" \
            -Xms"$SPARK_EXECUTOR_MEMORY" -Xmx"$SPARK_EXECUTOR_MEMORY" \
            -cp "$classpath" \
            org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
            --driver-url "$SPARK_DRIVER_URL" \
            --executor-id "$SPARK_EXECUTOR_ID" \
            --cores "$SPARK_EXECUTOR_CORES" \
            --app-id "$SPARK_APPLICATION_ID" \
            --hostname "$SPARK_EXECUTOR_POD_IP" \
            --resourceProfileId "$SPARK_RESOURCE_PROFILE_ID" \
            --podName "$SPARK_EXECUTOR_POD_NAME"
        ;;
    "")
        echo "usage: docker-entrypoint.sh master [--set KEY=VALUE ...] | executor | COMMAND..." >&2
        exit 2
        ;;
    *)
        exec "$@"
        ;;
esac
