package manifests

import (
	"io/fs"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/koord-project/koord/apis/extension"
)

// Every quantity a shipped CRD accepts is bounded as the components' decoders
// bound it (extension.QuantityPattern): an unbounded exponent lets one value
// cost every watching component seconds (docs/security.md).
func TestCRDQuantitiesAreBounded(t *testing.T) {
	for _, set := range []fs.FS{CRDs, ThirdPartyCRDs} {
		files, err := fs.Glob(set, "*/*.yaml")
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			data, err := fs.ReadFile(set, f)
			if err != nil {
				t.Fatal(err)
			}
			var crd map[string]any
			if err := yaml.Unmarshal(data, &crd); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			quantities := 0
			walkSchema(crd, f, func(path string, node map[string]any) {
				if node["x-kubernetes-int-or-string"] != true {
					return
				}
				p, _ := node["pattern"].(string)
				if p == "" {
					return // an IntOrString, not a quantity
				}
				quantities++
				if p != extension.QuantityPattern {
					t.Errorf("%s: quantity pattern %q is not extension.QuantityPattern (run make generate)", path, p)
				}
			})
			t.Logf("%s: %d quantity fields", f, quantities)
		}
	}
}

func walkSchema(v any, path string, visit func(string, map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		visit(path, v)
		for k, c := range v {
			walkSchema(c, path+"."+k, visit)
		}
	case []any:
		for _, c := range v {
			walkSchema(c, path+"[]", visit)
		}
	}
}
