// Command burner keeps --cores CPUs busy until it is stopped: the e2e
// suite's CPU-bound workload (load-aware placement, run-queue latency).
package main

import (
	"flag"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	cores := flag.Int("cores", 1, "how many CPU-bound loops to run")
	flag.Parse()
	for i := 0; i < *cores; i++ {
		go func() {
			x := uint64(1)
			for {
				x = x*6364136223846793005 + 1442695040888963407
			}
		}()
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	<-sigs
}
