// Command smdschema writes harness/sim/src/apiserver/patch/smd/builtins.json: the
// structured-merge-diff schema kube-apiserver v1.35.4 tracks managedFields with, and the empty
// object each built-in kind starts from on create (issue #28, docs/differential.md).
//
//	cd upstream && go run ./smdschema -o ../harness/sim/src/apiserver/patch/smd/builtins.json
//
// The schema is built the way kube-apiserver builds it (GenericAPIServer.getOpenAPIModels): the
// OpenAPI v3 definitions of its generated openapi package, without disabled features' fields,
// named by the scheme's definition namer, converted by kube-openapi's schemaconv. The empty
// objects are what the create handler's `Creater.New(kind)` encodes to: the zero Go value of
// each versioned type (non-pointer structs present, omitempty/omitzero members absent).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	apiextensionsscheme "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/util/openapi"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	aggregatorscheme "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/scheme"
	builder3 "k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/schemaconv"
	"k8s.io/kube-openapi/pkg/util"
	generatedopenapi "k8s.io/kubernetes/pkg/generated/openapi"
	smd "sigs.k8s.io/structured-merge-diff/v6/schema"
)

func main() {
	out := flag.String("o", "", "output file (default stdout)")
	flag.Parse()
	doc, err := generate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "smdschema:", err)
		os.Exit(1)
	}
	if *out == "" {
		os.Stdout.Write(doc)
		return
	}
	if err := os.WriteFile(*out, doc, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "smdschema:", err)
		os.Exit(1)
	}
}

func generate() ([]byte, error) {
	schemes := []*runtime.Scheme{clientgoscheme.Scheme, apiextensionsscheme.Scheme, aggregatorscheme.Scheme}
	namer := openapinamer.NewDefinitionNamer(schemes...)
	defs := openapi.GetOpenAPIDefinitionsWithoutDisabledFeatures(generatedopenapi.GetOpenAPIDefinitions)
	config := genericapiserver.DefaultOpenAPIV3Config(defs, namer)

	// Every kind of a served group version (not lists, options or internal events).
	type kindInfo struct {
		apiVersion, kind, goName, defName string
		obj                               runtime.Object
	}
	var kinds []kindInfo
	var names []string
	seen := map[string]bool{}
	for _, s := range schemes {
		for gvk := range s.AllKnownTypes() {
			if gvk.Version == runtime.APIVersionInternal || strings.HasSuffix(gvk.Kind, "List") ||
				strings.HasSuffix(gvk.Kind, "Options") || gvk.Kind == "WatchEvent" || gvk.Kind == "Status" ||
				gvk.Kind == "APIGroup" || gvk.Kind == "APIVersions" || gvk.Kind == "APIGroupList" ||
				gvk.Kind == "APIResourceList" {
				continue
			}
			obj, err := s.New(gvk)
			if err != nil {
				continue
			}
			goName := util.GetCanonicalTypeName(obj)
			if _, ok := config.Definitions[goName]; !ok {
				continue
			}
			defName, _ := config.GetDefinitionName(goName)
			key := gvk.GroupVersion().String() + "/" + gvk.Kind
			if seen[key] {
				continue
			}
			seen[key] = true
			kinds = append(kinds, kindInfo{gvk.GroupVersion().String(), gvk.Kind, goName, defName, obj})
			names = append(names, goName)
		}
	}
	// The list kinds and the meta types every document carries (discovery, Status, options,
	// watch events): so the schema names every definition the apiserver serves.
	for _, s := range schemes {
		for gvk := range s.AllKnownTypes() {
			if gvk.Version == runtime.APIVersionInternal || !strings.HasSuffix(gvk.Kind, "List") {
				continue
			}
			obj, err := s.New(gvk)
			if err != nil {
				continue
			}
			goName := util.GetCanonicalTypeName(obj)
			if _, ok := config.Definitions[goName]; ok && !seen[goName] {
				seen[goName] = true
				names = append(names, goName)
			}
		}
	}
	for _, obj := range []any{&metav1.Status{}, &metav1.DeleteOptions{}, &metav1.WatchEvent{}, &metav1.Patch{},
		&metav1.APIGroup{}, &metav1.APIGroupList{}, &metav1.APIResourceList{}, &metav1.APIVersions{}, &version.Info{}} {
		names = append(names, util.GetCanonicalTypeName(obj))
	}
	sort.Strings(names)
	models, err := builder3.BuildOpenAPIDefinitionsForResources(config, names...)
	if err != nil {
		return nil, err
	}
	schema, err := schemaconv.ToSchemaFromOpenAPI(models, false)
	if err != nil {
		return nil, err
	}

	types := map[string]any{}
	for _, td := range schema.Types {
		types[td.Name] = atom(td.Atom)
	}
	goTypes := map[string]any{}
	seenTypes := map[reflect.Type]bool{}
	for _, k := range kinds {
		visitGoType(reflect.TypeOf(k.obj), goTypes, seenTypes)
	}
	kindsOut := map[string]any{}
	for _, k := range kinds {
		zero, err := json.Marshal(k.obj)
		if err != nil {
			return nil, err
		}
		kindsOut[k.apiVersion+"/"+k.kind] = map[string]any{
			"type": k.defName,
			"zero": json.RawMessage(zero),
		}
	}
	doc := map[string]any{
		"generator": "upstream/smdschema: k8s.io/kubernetes v1.35.4 generated OpenAPI v3 definitions, kube-openapi schemaconv, structured-merge-diff v6",
		"types":     types,
		"kinds":     kindsOut,
		"go":        goTypes,
	}
	return encode(doc)
}

// encode writes one type or kind per line, keys sorted, so regenerating gives small diffs.
func encode(doc map[string]any) ([]byte, error) {
	var b []byte
	b = append(b, "{\n"...)
	for i, section := range []string{"generator", "types", "kinds", "go"} {
		if i > 0 {
			b = append(b, ",\n"...)
		}
		b = append(b, fmt.Sprintf("%q: ", section)...)
		entries, ok := doc[section].(map[string]any)
		if !ok {
			v, err := json.Marshal(doc[section])
			if err != nil {
				return nil, err
			}
			b = append(b, v...)
			continue
		}
		keys := make([]string, 0, len(entries))
		for k := range entries {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, "{\n"...)
		for j, k := range keys {
			v, err := json.Marshal(entries[k])
			if err != nil {
				return nil, err
			}
			name, _ := json.Marshal(k)
			b = append(b, "  "...)
			b = append(b, name...)
			b = append(b, ": "...)
			b = append(b, v...)
			if j < len(keys)-1 {
				b = append(b, ',')
			}
			b = append(b, '\n')
		}
		b = append(b, '}')
	}
	b = append(b, "\n}\n"...)
	return b, nil
}

var marshalerType = reflect.TypeOf((*json.Marshaler)(nil)).Elem()

// visitGoType records, for every struct type reachable from t, how encoding/json writes each of
// its members (harness/sim/src/apiserver/patch/smd/goencoding.rs reads it):
// [omit, zero] per JSON name: omit says which values a decoded-then-encoded member loses ("null",
// "empty" for an empty or null list or map, `""`, `0`, `false`, "zero" for omitzero: the zero
// value, "nil" for a list or map without omitempty: empty, it is written as null, or "never");
// zero is the member's zero value as written, which a body that leaves the member out gets
// unless omit drops it.
func visitGoType(t reflect.Type, out map[string]any, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return
	}
	seen[t] = true
	if t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType) {
		return
	}
	defName := util.ToRESTFriendlyName(t.PkgPath() + "." + t.Name())
	fields := map[string]any{}
	collectFields(t, fields, out, seen)
	if len(fields) > 0 {
		out[defName] = fields
	}
}

func collectFields(t reflect.Type, fields map[string]any, out map[string]any, seen map[reflect.Type]bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		parts := strings.Split(tag, ",")
		jsonName := parts[0]
		omitempty, omitzero := false, false
		for _, o := range parts[1:] {
			omitempty = omitempty || o == "omitempty"
			omitzero = omitzero || o == "omitzero"
		}
		if f.Anonymous && jsonName == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				collectFields(et, fields, out, seen)
				continue
			}
		}
		if jsonName == "" {
			jsonName = f.Name
		}
		visitGoType(f.Type, out, seen)
		zero, err := json.Marshal(reflect.Zero(f.Type).Interface())
		if err != nil {
			continue
		}
		omit := "never"
		if k := f.Type.Kind(); (k == reflect.Slice && f.Type.Elem().Kind() != reflect.Uint8) || k == reflect.Map {
			// Stored as protobuf, an empty list or map comes back nil: written as null.
			omit = "nil"
		}
		switch {
		case omitzero:
			omit = "zero"
		case omitempty:
			switch f.Type.Kind() {
			case reflect.Pointer, reflect.Interface:
				omit = "null"
			case reflect.Slice, reflect.Map, reflect.Array:
				omit = "empty"
			case reflect.String:
				omit = "\"\""
			case reflect.Bool:
				omit = "false"
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
				reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
				reflect.Float32, reflect.Float64:
				omit = "0"
			}
		}
		fields[jsonName] = []any{omit, json.RawMessage(zero)}
	}
}

// The compact form the sim reads (harness/sim/src/apiserver/patch/smd/schema.rs):
// a type reference is a name, or {"scalar"|"list"|"map": ..., "er": relationship override}.
func typeRef(tr smd.TypeRef) any {
	var out map[string]any
	if tr.NamedType != nil {
		if tr.ElementRelationship == nil {
			return *tr.NamedType
		}
		out = map[string]any{"named": *tr.NamedType}
	} else {
		out = atom(tr.Inlined)
	}
	if tr.ElementRelationship != nil {
		out["er"] = string(*tr.ElementRelationship)
	}
	return out
}

func atom(a smd.Atom) map[string]any {
	out := map[string]any{}
	if a.Scalar != nil {
		out["scalar"] = string(*a.Scalar)
	}
	if a.List != nil {
		l := map[string]any{"elementType": typeRef(a.List.ElementType)}
		if a.List.ElementRelationship != "" {
			l["er"] = string(a.List.ElementRelationship)
		}
		if len(a.List.Keys) > 0 {
			l["keys"] = a.List.Keys
		}
		out["list"] = l
	}
	if a.Map != nil {
		m := map[string]any{}
		if len(a.Map.Fields) > 0 {
			sorted := append([]smd.StructField(nil), a.Map.Fields...)
			sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
			var fields []any
			for _, f := range sorted {
				entry := map[string]any{"name": f.Name, "type": typeRef(f.Type)}
				if f.Default != nil {
					entry["default"] = f.Default
				}
				fields = append(fields, entry)
			}
			m["fields"] = fields
		}
		if a.Map.ElementType.NamedType != nil || a.Map.ElementType.Inlined != (smd.Atom{}) {
			m["elementType"] = typeRef(a.Map.ElementType)
		}
		if a.Map.ElementRelationship != "" {
			m["er"] = string(a.Map.ElementRelationship)
		}
		out["map"] = m
	}
	return out
}
