package controlplane

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
)

// Apply creates every object of a multi-document YAML manifest, as
// `kubectl create -f` would; objects that already exist are left as they are.
func (cp *ControlPlane) Apply(ctx context.Context, manifest []byte) error {
	_, err := cp.create(ctx, manifest, metav1.CreateOptions{}, true)
	return err
}

// CreateStrict creates every object of a manifest with strict field
// validation, as kubectl does by default (a field the schema lacks is an
// error), and returns them as created. An object that exists is an error.
func (cp *ControlPlane) CreateStrict(ctx context.Context, manifest []byte) ([]*unstructured.Unstructured, error) {
	return cp.create(ctx, manifest, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}, false)
}

// Delete deletes the objects (as CreateStrict returned them); one already
// gone is fine.
func (cp *ControlPlane) Delete(ctx context.Context, objs ...*unstructured.Unstructured) error {
	mapper, dyn, err := cp.dynamicClient()
	if err != nil {
		return err
	}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return err
		}
		err = dyn.Resource(mapping.Resource).Namespace(o.GetNamespace()).Delete(ctx, o.GetName(), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

func (cp *ControlPlane) dynamicClient() (meta.RESTMapper, dynamic.Interface, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cp.Config)
	if err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		return nil, nil, err
	}
	return restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)), dyn, nil
}

func (cp *ControlPlane) create(ctx context.Context, manifest []byte, opts metav1.CreateOptions, existingIsFine bool) ([]*unstructured.Unstructured, error) {
	mapper, dyn, err := cp.dynamicClient()
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		obj := &unstructured.Unstructured{}
		if err := utilyaml.Unmarshal(doc, &obj.Object); err != nil {
			return out, err
		}
		if len(obj.Object) == 0 {
			continue
		}
		gvk := obj.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return out, fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if ns := obj.GetNamespace(); ns != "" {
			ri = dyn.Resource(mapping.Resource).Namespace(ns)
		}
		created, err := ri.Create(ctx, obj, opts)
		switch {
		case err == nil:
			created.SetGroupVersionKind(gvk)
			out = append(out, created)
		case existingIsFine && apierrors.IsAlreadyExists(err):
		default:
			return out, fmt.Errorf("creating %s %s: %w", gvk.Kind, obj.GetName(), err)
		}
	}
}
