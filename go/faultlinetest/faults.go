package faultlinetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// NodeOp is one node primitive of the sim's control endpoint (harness/sim/src/cluster/node/nodeops.rs,
// `{"op": "...", ...}` on the wire). Build one with the functions below.
type NodeOp struct {
	Op string `json:"op"`
	// PV names the volume of the stale-mount primitives.
	PV string `json:"pv,omitempty"`
}

// The node primitives; each fault's inverse is in Inverse.
func KubeletStop() NodeOp      { return NodeOp{Op: "kubeletStop"} }
func KubeletStart() NodeOp     { return NodeOp{Op: "kubeletStart"} }
func KubeletHang() NodeOp      { return NodeOp{Op: "kubeletHang"} }
func KubeletRestart() NodeOp   { return NodeOp{Op: "kubeletRestart"} }
func PowerOff() NodeOp         { return NodeOp{Op: "powerOff"} }
func PowerOn() NodeOp          { return NodeOp{Op: "powerOn"} }
func Reboot() NodeOp           { return NodeOp{Op: "reboot"} }
func PowerCycle() NodeOp       { return NodeOp{Op: "powerCycle"} }
func PartitionNetwork() NodeOp { return NodeOp{Op: "partitionNetwork"} }
func HealNetwork() NodeOp      { return NodeOp{Op: "healNetwork"} }
func HungNFS() NodeOp          { return NodeOp{Op: "hungNfs"} }
func ClearHungNFS() NodeOp     { return NodeOp{Op: "clearHungNfs"} }
func IOErrors() NodeOp         { return NodeOp{Op: "ioErrors"} }
func ClearIOErrors() NodeOp    { return NodeOp{Op: "clearIoErrors"} }
func CSIPluginDown() NodeOp    { return NodeOp{Op: "csiPluginDown"} }
func CSIPluginUp() NodeOp      { return NodeOp{Op: "csiPluginUp"} }
func CSIPluginRestart() NodeOp { return NodeOp{Op: "csiPluginRestart"} }
func ProberBroken() NodeOp     { return NodeOp{Op: "proberBroken"} }
func ProberFixed() NodeOp      { return NodeOp{Op: "proberFixed"} }

// StaleDeviceMount leaves a device mount of the persistent volume pv behind on the node.
func StaleDeviceMount(pv string) NodeOp { return NodeOp{Op: "staleDeviceMount", PV: pv} }

// ClearStaleDeviceMount removes it.
func ClearStaleDeviceMount(pv string) NodeOp { return NodeOp{Op: "clearStaleDeviceMount", PV: pv} }

// Inverse is the primitive that undoes op, as the sim's own table (NodeOp::inverse) has it;
// false for one-shot primitives (restarts, reboots, power cycles) and the undoing ones.
func (op NodeOp) Inverse() (NodeOp, bool) {
	switch op.Op {
	case "kubeletStop", "kubeletHang":
		return KubeletStart(), true
	case "powerOff":
		return PowerOn(), true
	case "partitionNetwork":
		return HealNetwork(), true
	case "hungNfs":
		return ClearHungNFS(), true
	case "ioErrors":
		return ClearIOErrors(), true
	case "csiPluginDown":
		return CSIPluginUp(), true
	case "proberBroken":
		return ProberFixed(), true
	case "staleDeviceMount":
		return ClearStaleDeviceMount(op.PV), true
	}
	return NodeOp{}, false
}

// Fault is an injected node primitive, catalogue operation or API fault; Heal applies the
// primitive's inverse (a one-shot primitive has nothing to heal), heals the operation as the
// catalogue says, or removes the API fault, once.
type Fault struct {
	sim  *Sim
	Node string
	Op   NodeOp
	// API is the API fault, for faults made by InjectAPI (Node and Op are then empty).
	API *APIFault
	// Operation is the catalogue operation, for faults made by InjectOperation.
	Operation *Operation
	// Held is false for a one-shot operation (a restart): it is over, Heal does nothing.
	Held bool

	remove func(context.Context) error
	once   sync.Once
	err    error
}

// APIFault is a fault of the simulated API server, as the fault catalogue's apiErrors and
// apiLatency (docs/scenarios.md) describe it. Build one with APIErrors or APILatency.
type APIFault struct {
	Errors  *APIErrorsSpec  `json:"apiErrors,omitempty"`
	Latency *APILatencySpec `json:"apiLatency,omitempty"`
}

// APIErrorsSpec fails Rate (0 < Rate <= 1) of the matching requests with HTTP status Code and
// a Status body as kube-apiserver writes one for that code.
type APIErrorsSpec struct {
	Rate      float64  `json:"rate"`
	Code      int      `json:"code,omitempty"`
	Verbs     []string `json:"verbs,omitempty"`
	Resources []string `json:"resources,omitempty"`
}

// APILatencySpec answers every matching request Latency late (a Go duration string).
type APILatencySpec struct {
	Latency   string   `json:"latency"`
	Verbs     []string `json:"verbs,omitempty"`
	Resources []string `json:"resources,omitempty"`
}

// APIErrors fails rate of the requests whose verb (get, list, watch, create, update, patch,
// delete, deletecollection) is in verbs and whose resource (a plural: "pods") is in
// resources, with HTTP status code (0: 500). Empty verbs or resources match all.
func APIErrors(rate float64, code int, verbs, resources []string) APIFault {
	return APIFault{Errors: &APIErrorsSpec{Rate: rate, Code: code, Verbs: verbs, Resources: resources}}
}

// APILatency delays every matching request by d (verbs and resources as for APIErrors).
func APILatency(d time.Duration, verbs, resources []string) APIFault {
	return APIFault{Latency: &APILatencySpec{Latency: d.String(), Verbs: verbs, Resources: resources}}
}

// InjectAPI starts an API fault; Heal removes it (Stop removes what is left). It works on an
// API-only sim too.
func (s *Sim) InjectAPI(ctx context.Context, af APIFault) (*Fault, error) {
	body, err := json.Marshal(af)
	if err != nil {
		return nil, err
	}
	var answer struct {
		ID uint64 `json:"id"`
	}
	if err := s.http.do(ctx, http.MethodPost, "/faultline/v1/apifaults", body, &answer); err != nil {
		return nil, fmt.Errorf("API fault %s: %w", body, err)
	}
	path := "/faultline/v1/apifaults/" + strconv.FormatUint(answer.ID, 10)
	f := &Fault{sim: s, API: &af, Held: true, remove: func(ctx context.Context) error {
		var removed any
		return s.http.do(ctx, http.MethodDelete, path, nil, &removed)
	}}
	s.mu.Lock()
	s.faults = append(s.faults, f)
	s.mu.Unlock()
	return f, nil
}

// Operation is a node operation of the fault catalogue (harness/faults/src/ops.rs), as a
// scenario writes it: its key (csiPluginDown, staleDeviceMount, ...) and its fields, the node
// among them. Package storage builds every storage operation; the sim maps each to its node
// primitives itself (harness/sim/src/cluster/faults.rs), so an operation means here what it
// means in a scenario.
type Operation struct {
	Key    string
	Fields map[string]any
}

// Node is the node the operation targets.
func (o Operation) Node() string {
	n, _ := o.Fields["node"].(string)
	return n
}

// MarshalJSON writes {"<key>": {fields}}.
func (o Operation) MarshalJSON() ([]byte, error) {
	fields := o.Fields
	if fields == nil {
		fields = map[string]any{}
	}
	return json.Marshal(map[string]any{o.Key: fields})
}

// Catalogue is the sim's fault catalogue, as GET /faultline/v1/catalogue lists it.
type Catalogue struct {
	Operations []CatalogueEntry `json:"operations"`
}

// CatalogueEntry is one node operation of the catalogue: its key, what it acts on (node,
// storage, api) and its lifetime (held, oneShot).
type CatalogueEntry struct {
	Key      string `json:"key"`
	Area     string `json:"area"`
	Lifetime string `json:"lifetime"`
}

// Catalogue asks the sim for its fault catalogue.
func (s *Sim) Catalogue(ctx context.Context) (Catalogue, error) {
	var c Catalogue
	err := s.http.do(ctx, http.MethodGet, "/faultline/v1/catalogue", nil, &c)
	return c, err
}

// InjectOperation injects a catalogue operation on its node (POST /faultline/v1/faults); Heal
// heals it by the catalogue's inverse (POST /faultline/v1/faults/heal), Stop heals what is
// left. A one-shot operation (csiPluginRestart) is over when this returns.
func (s *Sim) InjectOperation(ctx context.Context, op Operation) (*Fault, error) {
	body, err := json.Marshal(op)
	if err != nil {
		return nil, err
	}
	var answer struct {
		Lifetime string `json:"lifetime"`
	}
	if err := s.http.do(ctx, http.MethodPost, "/faultline/v1/faults", body, &answer); err != nil {
		return nil, fmt.Errorf("%s: %w", body, err)
	}
	f := &Fault{sim: s, Node: op.Node(), Operation: &op, Held: answer.Lifetime == "held"}
	if !f.Held {
		return f, nil
	}
	f.remove = func(ctx context.Context) error {
		var healed any
		if err := s.http.do(ctx, http.MethodPost, "/faultline/v1/faults/heal", body, &healed); err != nil {
			return fmt.Errorf("healing %s: %w", body, err)
		}
		return nil
	}
	s.mu.Lock()
	s.faults = append(s.faults, f)
	s.mu.Unlock()
	return f, nil
}

// Do runs one primitive on a node and returns the sim's message.
func (s *Sim) Do(ctx context.Context, node string, op NodeOp) (string, error) {
	body, err := json.Marshal(op)
	if err != nil {
		return "", err
	}
	var answer struct {
		Message string `json:"message"`
	}
	if err := s.http.do(ctx, http.MethodPost, "/faultline/v1/nodes/"+url.PathEscape(node)+"/ops", body, &answer); err != nil {
		return "", fmt.Errorf("%s on %s: %w", op.Op, node, err)
	}
	return answer.Message, nil
}

// Inject runs a primitive and keeps it for healing: by Heal, or by Stop if still active.
func (s *Sim) Inject(ctx context.Context, node string, op NodeOp) (*Fault, error) {
	if _, err := s.Do(ctx, node, op); err != nil {
		return nil, err
	}
	_, held := op.Inverse()
	f := &Fault{sim: s, Node: node, Op: op, Held: held}
	s.mu.Lock()
	s.faults = append(s.faults, f)
	s.mu.Unlock()
	return f, nil
}

// Heal applies the fault's inverse, once.
func (f *Fault) Heal(ctx context.Context) error {
	f.once.Do(func() {
		if f.remove != nil {
			f.err = f.remove(ctx)
		} else if inv, ok := f.Op.Inverse(); ok {
			_, f.err = f.sim.Do(ctx, f.Node, inv)
		}
		f.sim.mu.Lock()
		defer f.sim.mu.Unlock()
		for i, g := range f.sim.faults {
			if g == f {
				f.sim.faults = append(f.sim.faults[:i], f.sim.faults[i+1:]...)
				break
			}
		}
	})
	return f.err
}

// httpClient posts to the sim's control endpoint with the kubeconfig's credentials.
type httpClient struct {
	base   string
	client *http.Client
}

func newHTTPClient(cfg *rest.Config) (*httpClient, error) {
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	// envtest's Config.Host is host:port without a scheme; client-go defaults it, so do we.
	base, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, err
	}
	return &httpClient{base: strings.TrimSuffix(base.String(), "/"), client: c}, nil
}

func (h *httpClient) do(ctx context.Context, method, path string, body []byte, into any) error {
	req, err := http.NewRequestWithContext(ctx, method, h.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var st struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(data, &st) == nil && st.Message != "" {
			return fmt.Errorf("%s: %s", resp.Status, st.Message)
		}
		return fmt.Errorf("%s", resp.Status)
	}
	return json.Unmarshal(data, into)
}
