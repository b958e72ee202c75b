#!/usr/bin/env bash
# A Weir session on YARN, as Flink's yarn-session.sh: `weir yarn-session` with the right
# interpreter and the configuration of WEIR_CONF_DIR (default: deploy/conf). HADOOP_CONF_DIR
# (or YARN_CONF_DIR) must name the cluster's configuration (not for --help). spark-submit's
# output goes to $WEIR_LOG_DIR/weir-<user>-yarn-session-<host>.log.
#
#   yarn-session.sh [-nm NAME] [-qu QUEUE] [-jm MEM] [-tm MEM] [-s SLOTS] [-D key=value]
#                   [-d] [--ship-environment]          start a session
#   yarn-session.sh -id APPLICATION_ID [-d]            attach to a running session
#   yarn-session.sh -id APPLICATION_ID stop            stop it (it ends FINISHED)
#   yarn-session.sh --help
set -euo pipefail

# shellcheck source=SCRIPTDIR/config.sh
source "$(dirname "${BASH_SOURCE[0]}")/config.sh"

export WEIR_LOG_DIR
exec "$WEIR_PYTHON" -m weir.client.cli yarn-session "$@"
