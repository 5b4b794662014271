// Command gotypes writes harness/sim/src/controllers/podtemplate_types.json: the Go types
// reachable from k8s.io/api/core/v1.PodTemplateSpec at the pinned version, as reflection sees
// them (type names as reflect.Type.String() prints them, struct fields in declaration order,
// unexported ones included), and sample templates with their dump.ForHash text and
// controller.ComputeHash value, so the sim hashes pod templates the way kube-controller-manager
// does (harness/sim/src/controllers/gohash.rs; issue #28).
//
//	cd upstream && go run ./gotypes -o ../harness/sim/src/controllers/podtemplate_types.json
package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"os"
	"reflect"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/dump"
	"k8s.io/apimachinery/pkg/util/rand"
)

type field struct {
	Name     string `json:"name"`
	JSON     string `json:"json,omitempty"`
	Type     string `json:"type"`
	Embedded bool   `json:"embedded,omitempty"`
}

type typeInfo struct {
	String string  `json:"string"`
	Kind   string  `json:"kind"`
	Elem   string  `json:"elem,omitempty"`
	Key    string  `json:"key,omitempty"`
	Fields []field `json:"fields,omitempty"`
}

// id names a type uniquely: named types by package path and name, the others by structure.
func id(t reflect.Type) string {
	if t.Name() != "" {
		if t.PkgPath() == "" {
			return t.Name()
		}
		return t.PkgPath() + "." + t.Name()
	}
	switch t.Kind() {
	case reflect.Pointer:
		return "*" + id(t.Elem())
	case reflect.Slice:
		return "[]" + id(t.Elem())
	case reflect.Array:
		return fmt.Sprintf("[%d]", t.Len()) + id(t.Elem())
	case reflect.Map:
		return "map[" + id(t.Key()) + "]" + id(t.Elem())
	}
	return t.String()
}

func visit(t reflect.Type, out map[string]typeInfo) string {
	key := id(t)
	if _, ok := out[key]; ok {
		return key
	}
	info := typeInfo{String: t.String(), Kind: t.Kind().String()}
	out[key] = info
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		info.Elem = visit(t.Elem(), out)
	case reflect.Map:
		info.Key = visit(t.Key(), out)
		info.Elem = visit(t.Elem(), out)
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			jsonName := ""
			if f.IsExported() {
				tag := f.Tag.Get("json")
				for j := 0; j < len(tag); j++ {
					if tag[j] == ',' {
						tag = tag[:j]
						break
					}
				}
				if tag != "-" {
					jsonName = tag
				}
			}
			info.Fields = append(info.Fields, field{Name: f.Name, JSON: jsonName, Type: visit(f.Type, out), Embedded: f.Anonymous})
		}
	}
	out[key] = info
	return key
}

// computeHash is controller.ComputeHash (pkg/controller/controller_utils.go).
func computeHash(template *v1.PodTemplateSpec, collisionCount *int32) string {
	hasher := fnv.New32a()
	hasher.Reset()
	fmt.Fprintf(hasher, "%v", dump.ForHash(*template))
	if collisionCount != nil {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		hasher.Write(b)
	}
	return rand.SafeEncodeString(fmt.Sprint(hasher.Sum32()))
}

var samples = []string{
	`{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"busybox:1.36","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","securityContext":{},"schedulerName":"default-scheduler"}}`,
	`{"metadata":{"labels":{"app":"web","tier":"a<b"},"annotations":{"x":"y"}},"spec":{"volumes":[{"name":"data","emptyDir":{"sizeLimit":"1Gi"}},{"name":"cfg","configMap":{"name":"c","defaultMode":420,"optional":false}}],"containers":[{"name":"c","image":"nginx","args":["-x","y"],"ports":[{"containerPort":80,"protocol":"TCP"}],"env":[{"name":"A","value":"1"}],"resources":{"limits":{"cpu":"500m","memory":"128Mi"},"requests":{"cpu":"0.1","memory":"64M"}},"livenessProbe":{"httpGet":{"path":"/","port":"http","scheme":"HTTP"},"timeoutSeconds":1,"periodSeconds":10,"successThreshold":1,"failureThreshold":3},"readinessProbe":{"tcpSocket":{"port":80},"timeoutSeconds":1,"periodSeconds":10,"successThreshold":1,"failureThreshold":3},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"Always","securityContext":{"privileged":false,"runAsUser":1000}}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","nodeSelector":{"disk":"ssd"},"securityContext":{"fsGroup":2000},"schedulerName":"default-scheduler","tolerations":[{"key":"k","operator":"Exists","effect":"NoSchedule","tolerationSeconds":300}]}}`,
}

func main() {
	out := flag.String("o", "", "output file (default stdout)")
	flag.Parse()
	types := map[string]typeInfo{}
	root := visit(reflect.TypeOf(v1.PodTemplateSpec{}), types)
	type sample struct {
		Template  json.RawMessage `json:"template"`
		Dump      string          `json:"dump"`
		Hash      string          `json:"hash"`
		Collision string          `json:"hashWithCollisionCount2"`
	}
	var ss []sample
	for _, s := range samples {
		var t v1.PodTemplateSpec
		if err := json.Unmarshal([]byte(s), &t); err != nil {
			fmt.Fprintln(os.Stderr, "gotypes:", err)
			os.Exit(1)
		}
		// As kube-controller-manager has it: decoded from protobuf.
		pb, err := t.Marshal()
		if err != nil {
			fmt.Fprintln(os.Stderr, "gotypes:", err)
			os.Exit(1)
		}
		var fromPB v1.PodTemplateSpec
		if err := fromPB.Unmarshal(pb); err != nil {
			fmt.Fprintln(os.Stderr, "gotypes:", err)
			os.Exit(1)
		}
		two := int32(2)
		ss = append(ss, sample{Template: json.RawMessage(s), Dump: dump.ForHash(fromPB), Hash: computeHash(&fromPB, nil), Collision: computeHash(&fromPB, &two)})
	}
	keys := make([]string, 0, len(types))
	for k := range types {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b []byte
	b = append(b, "{\n\"generator\": \"upstream/gotypes: k8s.io/api v0.35.4 core/v1.PodTemplateSpec by reflection\",\n"...)
	b = append(b, fmt.Sprintf("\"root\": %q,\n\"types\": {\n", root)...)
	for i, k := range keys {
		v, _ := json.Marshal(types[k])
		name, _ := json.Marshal(k)
		b = append(b, "  "...)
		b = append(b, name...)
		b = append(b, ": "...)
		b = append(b, v...)
		if i < len(keys)-1 {
			b = append(b, ',')
		}
		b = append(b, '\n')
	}
	b = append(b, "},\n\"samples\": "...)
	sv, _ := json.MarshalIndent(ss, "", " ")
	b = append(b, sv...)
	b = append(b, "\n}\n"...)
	if *out == "" {
		os.Stdout.Write(b)
		return
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gotypes:", err)
		os.Exit(1)
	}
}
