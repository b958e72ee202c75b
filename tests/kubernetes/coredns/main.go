// CoreDNS with the plugins a cluster's DNS needs and nothing that reaches beyond it: the
// cluster's zone (kubernetes), health and readiness endpoints, a cache. Names outside
// cluster.local are not forwarded anywhere.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/ready"
)

// The order the plugins handle a query in (as in CoreDNS's plugin.cfg).
func init() {
	dnsserver.Directives = []string{"ready", "health", "errors", "loadbalance", "cache", "kubernetes"}
}

func main() { coremain.Run() }
