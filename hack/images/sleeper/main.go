// Command sleeper is the e2e suite's idle workload: it waits for SIGTERM.
// `sleeper cpus` prints the CPUs the calling process may run on (the
// Cpus_allowed_list of /proc/self/status) and exits, so the suite can exec it
// inside a container to see the cpuset the kernel really enforces there.
package main

import (
	"bufio"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "cpus" {
		os.Exit(printCPUs())
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	<-sigs
}

func printCPUs() int {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "Cpus_allowed_list:"); ok {
			fmt.Println(strings.TrimSpace(v))
			return 0
		}
	}
	fmt.Fprintln(os.Stderr, "no Cpus_allowed_list in /proc/self/status")
	return 1
}
