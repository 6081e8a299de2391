package coretest

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// FillLike sets every exported field of the struct *dst that the struct type like (core.Config) also has to a
// value of its own, so that SameFields can tell the fields apart once dst is converted to like.
func FillLike(t testing.TB, dst any, like reflect.Type) {
	t.Helper()
	v := reflect.ValueOf(dst).Elem()
	for i := range like.NumField() {
		f := like.Field(i)
		field := v.FieldByName(f.Name)
		if !f.IsExported() || !field.IsValid() {
			continue
		}
		if field.Type() != f.Type {
			t.Fatalf("%s has %s of type %v, want %v", v.Type(), f.Name, field.Type(), f.Type)
		}
		switch k := f.Type.Kind(); {
		case k >= reflect.Int && k <= reflect.Int64:
			field.SetInt(int64(i + 1))
		case k >= reflect.Uint && k <= reflect.Uint64:
			field.SetUint(1)
		case k == reflect.Bool:
			field.SetBool(true)
		case k == reflect.String:
			field.SetString(fmt.Sprint("field", i))
		case k == reflect.Slice: // one element, a string one named after the field
			field.Set(reflect.MakeSlice(f.Type, 1, 1))
			if f.Type.Elem().Kind() == reflect.String {
				field.Index(0).SetString(fmt.Sprint("field", i))
			}
		case f.Type == reflect.TypeFor[http.RoundTripper]():
			field.Set(reflect.ValueOf(&http.Transport{}))
		case f.Type == reflect.TypeFor[prometheus.Registerer]():
			field.Set(reflect.ValueOf(prometheus.NewRegistry()))
		case f.Type == reflect.TypeFor[context.Context]():
			field.Set(reflect.ValueOf(context.Background()))
		default:
			t.Fatalf("no test value for %s of type %v", f.Name, f.Type)
		}
	}
}

// SameFields fails t unless every exported field of the struct got (a core.Config) equals the field of that name
// in the struct want (the adapter's Config it was made from). A field want lacks (the adapter's own, such as its
// logger) must be set.
func SameFields(t testing.TB, want, got any) {
	t.Helper()
	w, g := reflect.ValueOf(want), reflect.ValueOf(got)
	for i := range g.NumField() {
		f := g.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		switch wf := w.FieldByName(f.Name); {
		case !wf.IsValid():
			if g.Field(i).IsZero() {
				t.Errorf("%s.%s not set", g.Type(), f.Name)
			}
		case !reflect.DeepEqual(g.Field(i).Interface(), wf.Interface()):
			t.Errorf("%s.%s = %#v, want %#v", g.Type(), f.Name, g.Field(i).Interface(), wf.Interface())
		}
	}
}
