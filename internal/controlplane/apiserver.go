package controlplane

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/keyutil"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

// apiServer is a kube-apiserver run in this process along the path the
// kube-apiserver binary takes (options, config, server chain), so that a
// program (the demo, the performance harness) can run one without the
// testing package. Its certificates and keys live in the given directory.
type apiServer struct {
	config *rest.Config
	cancel context.CancelFunc
	done   chan error
}

// startAPIServer serves on a free loopback port, stores in storage, and
// takes extra command-line flags (admission plugins, authorization mode).
func startAPIServer(dir string, storage *storagebackend.Config, flags []string) (_ *apiServer, err error) {
	s := options.NewServerRunOptions()
	// A registry of its own: the scheduler run in the same process sets
	// the default one from its own flags.
	registry := basecompatibility.NewComponentGlobalsRegistry()
	if err := registry.Register(basecompatibility.DefaultKubeComponent, compatibility.DefaultBuildEffectiveVersion(), utilfeature.DefaultMutableFeatureGate.DeepCopy()); err != nil {
		return nil, err
	}
	s.GenericServerRunOptions.ComponentGlobalsRegistry = registry

	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, f := range s.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(flags); err != nil {
		return nil, fmt.Errorf("kube-apiserver flags: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.SecureServing.Listener = ln
	s.SecureServing.BindPort = ln.Addr().(*net.TCPAddr).Port
	s.SecureServing.ExternalAddress = net.ParseIP("127.0.0.1")
	// Self-signed serving certificates are written here on first start.
	s.SecureServing.ServerCert.CertDirectory = filepath.Join(dir, "certs")
	s.ServiceClusterIPRanges = "10.0.0.0/16"
	s.Etcd.StorageConfig = *storage
	// No Endpoints for the kubernetes service on a loopback address.
	s.EndpointReconcilerType = "none"
	if err := registry.Set(); err != nil {
		return nil, err
	}
	keyFile, err := writeServiceAccountKey(dir)
	if err != nil {
		return nil, err
	}
	s.ServiceAccountSigningKeyFile = keyFile
	s.Authentication.ServiceAccounts.KeyFiles = []string{keyFile}
	s.Authentication.ServiceAccounts.Issuers = []string{"https://koord-controlplane.local"}

	ctx, cancel := context.WithCancel(context.Background())
	a := &apiServer{cancel: cancel}
	defer func() {
		if err != nil {
			a.stop()
		}
	}()
	completed, err := s.Complete(ctx)
	if err != nil {
		return nil, fmt.Errorf("completing kube-apiserver options: %w", err)
	}
	if errs := completed.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("kube-apiserver options: %w", utilerrors.NewAggregate(errs))
	}
	cfg, err := app.NewConfig(completed)
	if err != nil {
		return nil, err
	}
	cc, err := cfg.Complete()
	if err != nil {
		return nil, err
	}
	server, err := app.CreateServerChain(cc)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver: %w", err)
	}
	a.done = make(chan error, 1)
	go func() {
		defer close(a.done)
		prepared, err := server.PrepareRun()
		if err == nil {
			err = prepared.Run(ctx)
		}
		a.done <- err
	}()
	a.config = rest.CopyConfig(server.GenericAPIServer.LoopbackClientConfig)
	// The loopback config's limits are for the server's own controllers;
	// callers create thousands of objects.
	a.config.QPS, a.config.Burst = 1000, 10000
	if err := a.waitReady(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

// waitReady waits for /healthz and for the default namespace, which the
// server's own controller creates shortly after it starts serving.
func (a *apiServer) waitReady(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(a.config)
	if err != nil {
		return err
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-a.done:
			return false, fmt.Errorf("kube-apiserver exited: %v", err)
		default:
		}
		var status int
		if last = client.CoreV1().RESTClient().Get().AbsPath("/healthz").Do(ctx).StatusCode(&status).Error(); last != nil || status != 200 {
			return false, nil
		}
		_, last = client.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for kube-apiserver: %w (last: %v)", err, last)
	}
	return nil
}

// stop shuts the server down and waits until it has.
func (a *apiServer) stop() {
	a.cancel()
	if a.done != nil {
		if err := <-a.done; err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintf(os.Stderr, "kube-apiserver did not shut down cleanly: %v\n", err)
		}
		a.done = nil
	}
}

// writeServiceAccountKey writes a fresh key for signing service account
// tokens (kube-apiserver will not start without one).
func writeServiceAccountKey(dir string) (string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	pem, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "service-account.key")
	return path, os.WriteFile(path, pem, 0o600)
}
