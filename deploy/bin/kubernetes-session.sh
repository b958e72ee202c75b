#!/usr/bin/env bash
# Start a Weir session cluster on Kubernetes, as Flink's kubernetes-session.sh: the
# master's Deployment (the Spark driver, which creates the TaskManager pods), its
# Services, ConfigMap and RBAC, applied with kubectl. For users without Helm; the chart in
# deploy/kubernetes/weir renders the same objects.
#
#   kubernetes-session.sh -Dkubernetes.cluster-id=orders -Dkubernetes.namespace=streaming \
#       -Dkubernetes.container.image.ref=registry.example/weir:0.1.0
#   kubernetes-session.sh ... --dry-run > orders.yaml     # print every manifest, apply none
#
# The rest of the configuration comes from weir-conf.yaml (WEIR_CONF_DIR). Stop the
# cluster, every pod of it included, with: kubectl -n NAMESPACE delete deployment/CLUSTER_ID
set -euo pipefail

# shellcheck source=SCRIPTDIR/config.sh
source "$(dirname "${BASH_SOURCE[0]}")/config.sh"

exec "$WEIR_PYTHON" -m weir.client.cli kubernetes-session "$@"
