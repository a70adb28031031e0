package extension

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
)

// A resource.Quantity from outside is bounded before it is parsed.
// resource.ParseQuantity's cost grows faster than linearly with a negative
// exponent: "1e-99999" takes a millisecond, "1e-9999999" about a second,
// and ten such values in one NodeMetric delayed every other object of every
// component's watch by half a minute. Koordinator's figures never need more
// than 30 digits on each side of the point or a two-digit exponent ("5e-3",
// "1e18"); within these bounds the costliest value parses in about 10 µs.
const (
	MaxQuantityDigits         = 30
	MaxQuantityExponentDigits = 2
)

// QuantityPattern is the schema pattern of every quantity in Koord's CRDs
// (hack/update-codegen.sh puts it in place of controller-gen's unbounded
// one): what CheckQuantity accepts, as a regular expression.
const QuantityPattern = `^(\+|-)?(([0-9]{1,30}(\.[0-9]{0,30})?)|(\.[0-9]{1,30}))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?[0-9]{1,2}))?$`

// CheckQuantity says whether s is a quantity within the bounds above, in
// time linear in s and without parsing it. It accepts a subset of what
// resource.ParseQuantity accepts, so a value it passes may still fail there.
func CheckQuantity(s string) error {
	rest := strings.TrimPrefix(strings.TrimPrefix(s, "+"), "-")
	if len(rest) < len(s)-1 {
		return fmt.Errorf("quantity %q is not a number", truncate(s))
	}
	whole, rest := leadingDigits(rest)
	frac := ""
	if strings.HasPrefix(rest, ".") {
		frac, rest = leadingDigits(rest[1:])
	} else if whole == "" {
		return fmt.Errorf("quantity %q does not start with a digit or a point", truncate(s))
	}
	switch {
	case whole == "" && frac == "":
		return fmt.Errorf("quantity %q has no digits", truncate(s))
	case len(whole) > MaxQuantityDigits || len(frac) > MaxQuantityDigits:
		return fmt.Errorf("quantity %q has more than %d digits before or after the point", truncate(s), MaxQuantityDigits)
	}
	switch rest {
	case "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E":
		return nil
	}
	if rest[0] != 'e' && rest[0] != 'E' {
		return fmt.Errorf("quantity %q has an unknown suffix %q", truncate(s), truncate(rest))
	}
	exp := strings.TrimPrefix(strings.TrimPrefix(rest[1:], "+"), "-")
	digits, tail := leadingDigits(exp)
	switch {
	case len(exp) < len(rest[1:])-1 || digits == "" || tail != "":
		return fmt.Errorf("quantity %q has a malformed exponent", truncate(s))
	case len(digits) > MaxQuantityExponentDigits:
		return fmt.Errorf("quantity %q has an exponent of %d digits, more than the %d any resource needs", truncate(s), len(digits), MaxQuantityExponentDigits)
	}
	return nil
}

func leadingDigits(s string) (digits, rest string) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i], s[i:]
}

// CheckQuantities checks, before v is decoded into a value of type t, every
// part of v that t reads as a resource.Quantity: v is a JSON document as
// encoding/json decodes it into any (with UseNumber or without), or an
// unstructured object's content. The error names the path of the first
// value out of bounds. Parts of t that hold no quantity are not visited,
// so a type without any costs a map lookup.
func CheckQuantities(v any, t reflect.Type) error {
	n := quantityShape(t)
	if !n.has {
		return nil
	}
	if err := n.check(v); err != nil {
		return err
	}
	return nil
}

// shape is where a type holds quantities: itself, its fields by JSON name
// (an object), its items (a list) or its values (a map). Pointers are
// transparent, as in JSON.
type shape struct {
	kind   shapeKind
	has    bool
	fields map[string]*shape
	elem   *shape
}

type shapeKind int

const (
	leaf shapeKind = iota
	quantityKind
	objectKind
	listKind
	mapKind
)

var (
	quantityType    = reflect.TypeFor[resource.Quantity]()
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	shapes          sync.Map // reflect.Type → *shape
	shapesMu        sync.Mutex
)

func quantityShape(t reflect.Type) *shape {
	if s, ok := shapes.Load(t); ok {
		return s.(*shape)
	}
	shapesMu.Lock()
	defer shapesMu.Unlock()
	building := map[reflect.Type]*shape{}
	s := buildShape(t, building)
	markHas(s, map[*shape]bool{})
	for typ, sh := range building {
		shapes.LoadOrStore(typ, sh)
	}
	shapes.LoadOrStore(t, s)
	return s
}

// buildShape describes t; building holds the types seen so far, so that a
// recursive type refers to itself instead of recursing for ever.
func buildShape(t reflect.Type, building map[reflect.Type]*shape) *shape {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s, ok := building[t]; ok {
		return s
	}
	if s, ok := shapes.Load(t); ok {
		return s.(*shape)
	}
	s := &shape{}
	building[t] = s
	switch {
	case t == quantityType:
		s.kind = quantityKind
	case reflect.PointerTo(t).Implements(jsonUnmarshaler):
		// Decodes itself (a time, a duration, raw JSON): not a quantity.
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		s.kind, s.elem = listKind, buildShape(t.Elem(), building)
	case t.Kind() == reflect.Map:
		s.kind, s.elem = mapKind, buildShape(t.Elem(), building)
	case t.Kind() == reflect.Struct:
		s.kind, s.fields = objectKind, map[string]*shape{}
		addFields(s, t, building)
	}
	return s
}

// addFields adds t's fields to s by their JSON names, those of embedded and
// inline structs as encoding/json does.
func addFields(s *shape, t reflect.Type, building map[reflect.Type]*shape) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" && opts == "" {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		inline := (f.Anonymous && name == "") || slices.Contains(strings.Split(opts, ","), "inline")
		if inline && ft.Kind() == reflect.Struct && !reflect.PointerTo(ft).Implements(jsonUnmarshaler) {
			addFields(s, ft, building)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		s.fields[name] = buildShape(ft, building)
	}
}

func markHas(s *shape, seen map[*shape]bool) bool {
	if seen[s] {
		return s.has
	}
	seen[s] = true
	s.has = s.kind == quantityKind
	if s.elem != nil && markHas(s.elem, seen) {
		s.has = true
	}
	for _, f := range s.fields {
		if markHas(f, seen) {
			s.has = true
		}
	}
	return s.has
}

func (s *shape) check(v any) *pathError {
	if v == nil || !s.has {
		return nil
	}
	switch s.kind {
	case quantityKind:
		if err := checkQuantityValue(v); err != nil {
			return &pathError{err: err}
		}
	case objectKind:
		if m, ok := v.(map[string]any); ok {
			for name, item := range m {
				if f := s.fields[name]; f != nil {
					if err := f.check(item); err != nil {
						return err.under("." + name)
					}
				}
			}
		}
	case mapKind:
		if m, ok := v.(map[string]any); ok {
			for k, item := range m {
				if err := s.elem.check(item); err != nil {
					return err.under("." + k)
				}
			}
		}
	case listKind:
		if l, ok := v.([]any); ok {
			for i, item := range l {
				if err := s.elem.check(item); err != nil {
					return err.under(fmt.Sprintf("[%d]", i))
				}
			}
		}
	}
	return nil
}

// pathError is a quantity out of bounds and where it is, built on the way
// out so that a document without one costs no allocation.
type pathError struct {
	path []string // innermost first
	err  error
}

func (e *pathError) under(segment string) *pathError {
	e.path = append(e.path, segment)
	return e
}

func (e *pathError) Error() string {
	var b strings.Builder
	for i := len(e.path) - 1; i >= 0; i-- {
		b.WriteString(e.path[i])
	}
	path := strings.TrimPrefix(b.String(), ".")
	if path == "" {
		path = "value"
	}
	return path + ": " + e.err.Error()
}

// checkQuantityValue bounds a quantity as JSON decoding gives it: a string,
// or a number.
func checkQuantityValue(v any) error {
	switch v := v.(type) {
	case string:
		return CheckQuantity(v)
	case json.Number:
		return CheckQuantity(string(v))
	case float64:
		if a := math.Abs(v); a != 0 && (a < 1e-99 || a >= 1e100 || math.IsNaN(a)) {
			return fmt.Errorf("quantity %s is out of range", strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	return nil
}
