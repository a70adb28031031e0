package main

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The written tarball reads back as the image asked for: its tag, linux, the
// entrypoint, and the binary at its path, executable; twice the same digest.
func TestWriteReadsBack(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tool")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "img.tar")
	if err := write(out, "koord/tool:dev", []string{bin + "=/usr/local/bin/tool"}, []string{"/usr/local/bin/tool", "--flag"}, "65532"); err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag("koord/tool:dev")
	img, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || len(cf.Config.Entrypoint) != 2 || cf.Config.Entrypoint[1] != "--flag" || cf.Config.User != "65532" {
		t.Errorf("config %+v", cf)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %v, %v", layers, err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	found := false
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == "usr/local/bin/tool" {
			found = h.Mode&0o111 != 0
		}
	}
	if !found {
		t.Error("usr/local/bin/tool missing or not executable")
	}
	d1, _ := img.Digest()
	out2 := filepath.Join(dir, "img2.tar")
	if err := write(out2, "koord/tool:dev", []string{bin + "=/usr/local/bin/tool"}, []string{"/usr/local/bin/tool", "--flag"}, "65532"); err != nil {
		t.Fatal(err)
	}
	img2, _ := tarball.ImageFromPath(out2, &tag)
	if d2, _ := img2.Digest(); d1 != d2 {
		t.Errorf("same input, digests %s and %s", d1, d2)
	}
	if err := write(out, "koord/tool:dev", []string{bin + "=relative"}, nil, ""); err == nil {
		t.Error("a relative path in the image is an error")
	}
}
