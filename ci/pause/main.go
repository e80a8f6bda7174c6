// Command pause does nothing until it gets SIGTERM or SIGINT, then exits 0 at once. It is the
// process of the test cluster's sandbox (pause) image; as PID 1 in a container it receives
// only signals it handles, so it must handle them itself to stop promptly.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}
