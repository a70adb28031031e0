package extension

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// KeyError is the error of every parser here: it names where the bad value
// came from (an annotation, a label, a ConfigMap key) so that an operator can
// find and fix it.
type KeyError struct {
	// Kind is "annotation", "label" or "configmap <ns>/<name> key".
	Kind string
	Key  string
	Err  error
}

func (e *KeyError) Error() string { return fmt.Sprintf("%s %s: %v", e.Kind, e.Key, e.Err) }
func (e *KeyError) Unwrap() error { return e.Err }

func annotationError(key string, err error) error {
	return &KeyError{Kind: "annotation", Key: key, Err: err}
}

func labelError(key string, err error) error {
	return &KeyError{Kind: "label", Key: key, Err: err}
}

// decodeJSON decodes one JSON value. Unknown fields are accepted so that
// objects written by newer Koordinator releases keep working; wrong types,
// trailing garbage and invalid JSON are errors. Quantities are bounded
// (CheckQuantities) before they are parsed: anyone who may write the
// annotation could otherwise make each reader spend seconds on one.
func decodeJSON(value string, into any) error {
	if t := reflect.TypeOf(into); quantityShape(t).has {
		var doc any
		d := json.NewDecoder(strings.NewReader(value))
		d.UseNumber()
		if d.Decode(&doc) == nil {
			if err := CheckQuantities(doc, t); err != nil {
				return err
			}
		}
	}
	if err := json.Unmarshal([]byte(value), into); err != nil {
		return fmt.Errorf("invalid JSON %q: %w", truncate(value), err)
	}
	return nil
}

// truncate keeps error messages readable when a value is huge.
func truncate(s string) string {
	const max = 120
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
