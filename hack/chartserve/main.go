// Command chartserve serves the example fleet's vendor charts for `make demo` (hack/demo.sh), with no network and
// no real credentials: a Helm chart repository and an OCI registry (the CNCF distribution registry, in process) on
// 127.0.0.1, reached as https://charts.fleet.example and registry.fleet.example through a CONNECT proxy
// (internal/edge/chartfetch/chartserver). It writes the repositories file that allows them, prints the proxy's URL
// (for HTTPS_PROXY) on its first line of output and serves until it is stopped.
//
//	chartserve --charts examples/vendor-charts --repositories <file>
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/sirupsen/logrus"

	"github.com/fleetwave/fleetwave/internal/edge/chartfetch/chartserver"
)

func main() {
	charts := flag.String("charts", "examples/vendor-charts", "chart sources: <name>/<version>/Chart.yaml")
	repositories := flag.String("repositories", "", "where to write the repositories file (Argo CD repository Secrets)")
	flag.Parse()
	// The in-process registry logs every request through logrus: not the demo's output.
	logrus.SetOutput(io.Discard)
	s, err := chartserver.Start(*charts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chartserve:", err)
		os.Exit(1)
	}
	defer s.Close()
	if *repositories != "" {
		if err := os.WriteFile(*repositories, []byte(s.Repositories()), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "chartserve:", err)
			os.Exit(1)
		}
	}
	fmt.Println(s.ProxyURL)
	fmt.Fprintf(os.Stderr, "chartserve: https://%s and %s/charts serve %v through the proxy %s\n",
		chartserver.HelmHost, chartserver.RegistryHost, s.Charts, s.ProxyURL)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
}
