// Command burner keeps --cores CPUs busy until it is stopped: the e2e
// suite's CPU-bound workload (load-aware placement, run-queue latency, BE
// suppression). With --memory it also allocates that much memory, touching
// every page, at --memory-rate per second, and holds it (BE eviction).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

func main() {
	cores := flag.Int("cores", 1, "how many CPU-bound loops to run")
	memory := flag.String("memory", "0", "memory to allocate and hold, a quantity (2Gi)")
	rate := flag.String("memory-rate", "256Mi", "how much of --memory to allocate each second")
	flag.Parse()
	for i := 0; i < *cores; i++ {
		go func() {
			x := uint64(1)
			for {
				x = x*6364136223846793005 + 1442695040888963407
			}
		}()
	}
	total, err := resource.ParseQuantity(*memory)
	if err != nil {
		fmt.Fprintln(os.Stderr, "--memory:", err)
		os.Exit(2)
	}
	step, err := resource.ParseQuantity(*rate)
	if err != nil || step.Value() <= 0 {
		fmt.Fprintln(os.Stderr, "--memory-rate: must be a positive quantity")
		os.Exit(2)
	}
	go allocate(total.Value(), step.Value())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	<-sigs
}

var held [][]byte

// allocate takes step bytes a second until it holds total, writing every
// page so that the memory is really used.
func allocate(total, step int64) {
	for have := int64(0); have < total; have += step {
		b := make([]byte, min(step, total-have))
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		held = append(held, b)
		time.Sleep(time.Second)
	}
}
