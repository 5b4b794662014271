// Command apfbootstrap writes harness/sim/src/apiserver/apf_bootstrap.json: the mandatory and
// suggested API Priority and Fairness objects kube-apiserver v1.35.4's config producer creates
// at start (k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap), as flowcontrol.apiserver.k8s.io/v1
// JSON, PriorityLevelConfigurations first (issue #28).
//
//	cd upstream && go run ./apfbootstrap -o ../harness/sim/src/apiserver/apf_bootstrap.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
)

func main() {
	out := flag.String("o", "", "output file (default stdout)")
	flag.Parse()
	var objects []any
	pls := append(append([]*flowcontrolv1.PriorityLevelConfiguration{}, bootstrap.MandatoryPriorityLevelConfigurations...), bootstrap.SuggestedPriorityLevelConfigurations...)
	for _, pl := range pls {
		pl := pl.DeepCopy()
		pl.APIVersion, pl.Kind = "flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration"
		objects = append(objects, pl)
	}
	fss := append(append([]*flowcontrolv1.FlowSchema{}, bootstrap.MandatoryFlowSchemas...), bootstrap.SuggestedFlowSchemas...)
	for _, fs := range fss {
		fs := fs.DeepCopy()
		fs.APIVersion, fs.Kind = "flowcontrol.apiserver.k8s.io/v1", "FlowSchema"
		objects = append(objects, fs)
	}
	b, err := json.MarshalIndent(map[string]any{
		"generator": "upstream/apfbootstrap: k8s.io/apiserver v0.35.4 pkg/apis/flowcontrol/bootstrap",
		"objects":   objects,
	}, "", " ")
	if err != nil {
		fmt.Fprintln(os.Stderr, "apfbootstrap:", err)
		os.Exit(1)
	}
	b = append(b, '\n')
	if *out == "" {
		os.Stdout.Write(b)
		return
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "apfbootstrap:", err)
		os.Exit(1)
	}
}
