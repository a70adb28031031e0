// Command koordlet is Koord's node agent. See pkg/koordlet and DESIGN.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	nrtclientset "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/generated/clientset/versioned"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/koord-project/koord/pkg/client/koordclient"
	"github.com/koord-project/koord/pkg/features"
	"github.com/koord-project/koord/pkg/koordlet/agent"
	"github.com/koord-project/koord/pkg/version"
)

func main() {
	var (
		opts        agent.Options
		kubeconfig  string
		metricsAddr string
		pprof       bool
		publishNRT  bool
		showVersion bool
		secure      bool
	)
	fs := flag.NewFlagSet("koordlet", flag.ExitOnError)
	fs.StringVar(&opts.NodeName, "node-name", os.Getenv("NODE_NAME"), "this node's name (default $NODE_NAME)")
	fs.StringVar(&kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file (default $KUBECONFIG, else the in-cluster config)")
	fs.StringVar(&opts.SysfsRoot, "sysfs-root", "/sys", "where the host's sysfs is mounted")
	fs.StringVar(&opts.ProcfsRoot, "procfs-root", "/proc", "where the host's procfs is mounted")
	fs.StringVar(&opts.KubeletRootDir, "kubelet-root-dir", "/var/lib/kubelet", "kubelet's --root-dir: config.yaml and cpu_manager_state are read from it")
	fs.StringVar(&opts.KubeletPodResourcesSocket, "kubelet-pod-resources-socket", "", "kubelet's pod-resources API, asked for the CPUs kubelet pinned when cpu_manager_state is not under --kubelet-root-dir (default <kubelet-root-dir>/pod-resources/kubelet.sock)")
	fs.StringVar(&opts.CgroupRoot, "cgroup-root", "/sys/fs/cgroup", "where the host's cgroup hierarchies are mounted")
	fs.StringVar(&opts.KubeletCgroupRoot, "kubelet-cgroup-root", "", "kubelet's --cgroup-root, under which its kubepods cgroups are (default /)")
	fs.DurationVar(&opts.SyncInterval, "topology-sync-interval", time.Minute, "how often the machine's CPU topology is re-read (CPU hotplug)")
	fs.DurationVar(&opts.ReconcileInterval, "reconcile-interval", time.Second, "how often kubelet's state and the pods' cpusets are checked when no event says they changed")
	fs.DurationVar(&opts.CollectInterval, "collect-interval", 5*time.Second, "how often node and pod usage is sampled")
	fs.DurationVar(&opts.MaxWindow, "max-aggregate-window", 30*time.Minute, "longest window of aggregatedNodeUsages; bounds the usage history kept")
	fs.BoolVar(&publishNRT, "publish-node-resource-topology", false, "also publish the topology as a topology.node.k8s.io/v1alpha2 NodeResourceTopology (for topologySource: NodeResourceTopology; the CRD must be installed)")
	fs.BoolVar(&opts.RunQueueLatency, "runqueue-latency", true, "measure each pod's run-queue latency with eBPF (needs BTF and CAP_BPF/CAP_PERFMON)")
	fs.StringVar(&metricsAddr, "metrics-addr", "127.0.0.1:9316", "address of /metrics and /healthz; plain HTTP on localhost unless --metrics-secure")
	fs.BoolVar(&secure, "metrics-secure", false, "serve HTTPS (self-signed) and /metrics only to clients authorized for GET /metrics (TokenReview and SubjectAccessReview); /healthz stays open; use it when --metrics-addr is reachable from other pods")
	fs.BoolVar(&pprof, "enable-pprof", false, "serve /debug/pprof/ on --metrics-addr")
	fs.BoolVar(&showVersion, "version", false, "print the version and exit")
	schedulers := fs.String("scheduler-names", agent.DefaultSchedulerName, "comma-separated schedulerNames of koord-scheduler's profiles: only their pods' resource-status cpusets are applied")
	gates := features.New()
	features.Flag(fs, gates)
	klog.InitFlags(fs)
	_ = fs.Parse(os.Args[1:])
	if showVersion {
		fmt.Println(version.String("koordlet"))
		return
	}
	// The eBPF probe runs only when both the flag and the gate allow it.
	opts.RunQueueLatency = opts.RunQueueLatency && gates.Enabled(features.RunqueueLatency)
	opts.Gates = gates
	opts.SchedulerNames = strings.Split(*schedulers, ",")
	if err := run(opts, kubeconfig, metricsAddr, pprof, publishNRT, secure); err != nil {
		klog.ErrorS(err, "koordlet failed")
		klog.Flush()
		os.Exit(1)
	}
}

func run(opts agent.Options, kubeconfig, metricsAddr string, pprof, publishNRT, secure bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var cfg *rest.Config
	var err error
	if kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return fmt.Errorf("API server config: %w", err)
	}
	cfg.UserAgent = "koordlet/" + version.Version
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(features.ReportNotImplemented(klog.Background(), opts.Gates))
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	koord, err := koordclient.New(cfg)
	if err != nil {
		return err
	}
	if publishNRT {
		if opts.NRT, err = nrtclientset.NewForConfig(koordclient.JSON(cfg)); err != nil {
			return err
		}
	}
	if opts.Dynamic, err = dynamic.NewForConfig(koordclient.JSON(cfg)); err != nil {
		return err
	}
	a, err := agent.New(client, koord, opts, reg)
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: metricsAddr, Handler: a.Handler(reg, pprof), ReadHeaderTimeout: 10 * time.Second}
	serve := srv.ListenAndServe
	if secure {
		if err := secureServing(srv, cfg); err != nil {
			return err
		}
		serve = func() error { return srv.ListenAndServeTLS("", "") }
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- serve() }()
	runErr := make(chan error, 1)
	go func() { runErr <- a.Run(klog.NewContext(ctx, klog.Background())) }()
	select {
	case err = <-serveErr:
		stop()
		<-runErr
		return fmt.Errorf("serving %s: %w", metricsAddr, err)
	case err = <-runErr:
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if serr := srv.Shutdown(shutdown); serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}
