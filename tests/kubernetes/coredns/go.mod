// CoreDNS for the test cluster's DNS, with only the plugins main.go names.
module weir.test/coredns

go 1.24.0

require github.com/coredns/coredns v1.14.7
