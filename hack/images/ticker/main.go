// Command ticker is the e2e suite's latency-sensitive workload: it wakes up
// every --period, does a little work and sleeps again, the way a service
// answers small requests. Each wake-up is a run-queue wait koordlet's eBPF
// probe measures, so how long it waits for a CPU shows the interference
// other pods cause.
package main

import (
	"flag"
	"os"
	"os/signal"
	"syscall"
	"time"
)

var sink uint64

func main() {
	period := flag.Duration("period", time.Millisecond, "how often to wake up")
	work := flag.Int("work", 20000, "loop iterations of work per wake-up")
	flag.Parse()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	t := time.NewTicker(*period)
	defer t.Stop()
	for {
		select {
		case <-sigs:
			return
		case <-t.C:
			x := sink
			for i := 0; i < *work; i++ {
				x = x*6364136223846793005 + 1442695040888963407
			}
			sink = x
		}
	}
}
