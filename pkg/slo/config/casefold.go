package config

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
)

// canonical renames the keys of the JSON raw that name a field of t only up
// to case ("CPUEvictTimeWindowSeconds" for cpuEvictTimeWindowSeconds) to the
// field's own name. Koordinator decodes the ConfigMap with encoding/json,
// which matches keys that way, and its documentation has such keys; the
// strict decoding here is case-sensitive, and would take them for typos.
// raw comes back unchanged when it is not JSON (the decoder reports that).
func canonical(raw []byte, t reflect.Type) []byte {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return raw
	}
	changed := false
	v = canonicalValue(v, t, &changed)
	if !changed {
		return raw
	}
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}

func canonicalValue(v any, t reflect.Type, changed *bool) any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch x := v.(type) {
	case map[string]any:
		switch t.Kind() {
		case reflect.Struct:
			fields := jsonFields(t)
			out := make(map[string]any, len(x))
			for k, val := range x {
				name, ft, ok := fieldFor(fields, k)
				if !ok {
					out[k] = val // unknown: the strict decoder reports it
					continue
				}
				if name != k {
					*changed = true
				}
				out[name] = canonicalValue(val, ft, changed)
			}
			return out
		case reflect.Map:
			for k, val := range x {
				x[k] = canonicalValue(val, t.Elem(), changed)
			}
		}
	case []any:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for i, val := range x {
				x[i] = canonicalValue(val, t.Elem(), changed)
			}
		}
	}
	return v
}

// jsonFields maps each JSON name of struct t, inline members' included, to
// its type.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		ft := f.Type
		if name == "" && f.Anonymous {
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					if _, ok := out[k]; !ok {
						out[k] = v
					}
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		out[name] = ft
	}
	return out
}

// fieldFor finds key among fields as encoding/json does: the exact name,
// else one equal to it up to case.
func fieldFor(fields map[string]reflect.Type, key string) (string, reflect.Type, bool) {
	if t, ok := fields[key]; ok {
		return key, t, true
	}
	for name, t := range fields {
		if strings.EqualFold(name, key) {
			return name, t, true
		}
	}
	return "", nil, false
}
