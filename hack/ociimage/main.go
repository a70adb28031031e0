// Command ociimage writes a container image tarball holding static binaries,
// with no Docker engine and no registry: the format `docker save` writes,
// which `ctr -n k8s.io images import` and `docker load` read.
//
//	ociimage --out _output/images/koordlet.tar --tag koord/koordlet:dev \
//	    --file bin/koordlet=/usr/local/bin/koordlet --entrypoint /usr/local/bin/koordlet
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var (
		out, tag, user string
		files, entry   list
	)
	flag.StringVar(&out, "out", "", "the image tarball to write")
	flag.StringVar(&tag, "tag", "", "the image's name, e.g. koord/koordlet:dev")
	flag.Var(&files, "file", "host=path-in-image; repeatable")
	flag.Var(&entry, "entrypoint", "the entrypoint, one argument per flag")
	flag.StringVar(&user, "user", "", "the user to run as (default root)")
	flag.Parse()
	if err := write(out, tag, files, entry, user); err != nil {
		fmt.Fprintf(os.Stderr, "ociimage: %v\n", err)
		os.Exit(1)
	}
}

// write builds a one-layer linux image of files and writes it to out.
func write(out, tag string, files, entrypoint []string, user string) error {
	if out == "" || tag == "" || len(files) == 0 {
		return fmt.Errorf("--out, --tag and at least one --file are required")
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("--tag %q: %w", tag, err)
	}
	layerTar, err := layer(files)
	if err != nil {
		return err
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil })
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config = v1.Config{Entrypoint: entrypoint, User: user, Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	return tarball.WriteToFile(out, ref, img)
}

// epoch keeps the layer, and so the image digest, the same for the same files.
var epoch = time.Unix(0, 0)

// layer is a tar of the files (host=path), with their parent directories.
func layer(files []string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, f := range files {
		host, dst, ok := strings.Cut(f, "=")
		if !ok || !path.IsAbs(dst) {
			return nil, fmt.Errorf("--file %q: want host-path=/absolute/path/in/image", f)
		}
		data, err := os.ReadFile(host)
		if err != nil {
			return nil, err
		}
		var parents []string
		for d := path.Dir(dst); d != "/"; d = path.Dir(d) {
			parents = append([]string{d}, parents...)
		}
		for _, d := range parents {
			if dirs[d] {
				continue
			}
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/", Mode: 0o755, ModTime: epoch}); err != nil {
				return nil, err
			}
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(dst, "/"), Mode: 0o755, Size: int64(len(data)), ModTime: epoch}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
