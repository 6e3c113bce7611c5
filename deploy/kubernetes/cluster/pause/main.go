// Command pause is the cluster's pod sandbox: it holds the pod's namespaces
// and does nothing else until SIGINT or SIGTERM, like registry.k8s.io/pause,
// which no registry here can serve. Built static and packed by mkimage.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
	<-c
}
