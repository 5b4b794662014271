// The test runs a controller-runtime envtest.Environment, unchanged, on faultline's
// envtest drop-in with its opt-in extras: FAULTLINE_ENVTEST_NODES (kubelets, scheduler,
// storage), FAULTLINE_ENVTEST_TIME_SCALE and FAULTLINE_ENVTEST_FAULTS (the fault endpoints,
// reached with faultlinetest.Attach).

package extras

import (
	"bytes"
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"faultline.dev/go/faultlinetest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// assets writes a KUBEBUILDER_ASSETS directory of the drop-in (`faultline envtest-assets`).
func assets(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin, err := faultlinetest.Binary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, err := exec.CommandContext(ctx, bin, "envtest-assets", dir).Output()
	if err != nil {
		t.Fatalf("faultline envtest-assets: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func TestPodsRunAndNodeFaultsHeal(t *testing.T) {
	dir := assets(t)
	t.Setenv("FAULTLINE_ENVTEST_NODES", "1")
	t.Setenv("FAULTLINE_ENVTEST_TIME_SCALE", "0.05")
	t.Setenv("FAULTLINE_ENVTEST_FAULTS", "1")
	env := &envtest.Environment{BinaryAssetsDirectory: dir}
	began := time.Now()
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("envtest Environment started in %s", time.Since(began).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(cfg)

	// The nodes are schedulable before envtest sees the API healthy: no wait here.
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 2 {
		t.Fatalf("%d nodes, want control-plane and worker-01", len(nodes.Items))
	}
	for _, n := range nodes.Items {
		notReadyTaint := slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
			return t.Key == corev1.TaintNodeNotReady
		})
		if !ready(&n) || notReadyTaint {
			t.Fatalf("node %s not Ready and untainted at the start: %+v %+v", n.Name, n.Status.Conditions, n.Spec.Taints)
		}
	}

	labels := map[string]string{"app": "web"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var node string
	took, err := faultlinetest.WaitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				node = p.Spec.NodeName
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the Deployment's pod is not Running: %v", err)
	}
	t.Logf("the Deployment's pod Running on %s after %s", node, took.Round(time.Millisecond))

	sim, err := faultlinetest.Attach(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sim.Stop(); err != nil {
			t.Error(err)
		}
	})
	fault, err := sim.Inject(ctx, node, faultlinetest.KubeletStop())
	if err != nil {
		t.Fatal(err)
	}
	nodeReady := func(want bool) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return ready(n) == want, nil
		}
	}
	// The node lifecycle controller's 40 s grace period, at time scale 0.05: 2 s.
	took, err = faultlinetest.WaitFor(ctx, 15*time.Second, nodeReady(false))
	if err != nil {
		t.Fatalf("%s still Ready with its kubelet stopped: %v", node, err)
	}
	t.Logf("%s NotReady %s after its kubelet stopped", node, took.Round(time.Millisecond))
	if err := fault.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	took, err = faultlinetest.WaitFor(ctx, 15*time.Second, nodeReady(true))
	if err != nil {
		t.Fatalf("%s not Ready again once healed: %v", node, err)
	}
	t.Logf("%s Ready %s after the heal", node, took.Round(time.Millisecond))
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Without FAULTLINE_ENVTEST_FAULTS the fault endpoints are not there, and with them only the
// admin may use them.
func TestFaultEndpointsAreOptInAndAdminOnly(t *testing.T) {
	dir := assets(t)
	for _, faults := range []string{"0", "1"} {
		t.Run("FAULTLINE_ENVTEST_FAULTS="+faults, func(t *testing.T) {
			t.Setenv("FAULTLINE_ENVTEST_FAULTS", faults)
			env := &envtest.Environment{BinaryAssetsDirectory: dir}
			cfg, err := env.Start()
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = env.Stop() }()
			_, err = faultlinetest.Attach(cfg)
			if faults == "0" {
				if err == nil || !strings.Contains(err.Error(), "404") {
					t.Fatalf("Attach without the fault endpoints: %v, want a 404", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			user, err := env.AddUser(envtest.User{Name: "alice", Groups: []string{"developers"}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = faultlinetest.Attach(user.Config())
			if err == nil || !strings.Contains(err.Error(), "403") {
				t.Fatalf("Attach as alice: %v, want a 403", err)
			}
		})
	}
}

// A bad value of an extra fails the start at once, with one line naming it.
func TestBadExtrasFailTheStart(t *testing.T) {
	dir := assets(t)
	for _, c := range []struct{ name, value, says string }{
		{"FAULTLINE_ENVTEST_NODES", "abc", `FAULTLINE_ENVTEST_NODES="abc": expected a number of worker nodes`},
		{"FAULTLINE_ENVTEST_TIME_SCALE", "0.05", `FAULTLINE_ENVTEST_TIME_SCALE="0.05" needs simulated nodes, but FAULTLINE_ENVTEST_NODES is unset`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(c.name, c.value)
			var stderr bytes.Buffer
			env := &envtest.Environment{BinaryAssetsDirectory: dir}
			env.ControlPlane.GetAPIServer().Err = &stderr
			began := time.Now()
			_, err := env.Start()
			_ = env.Stop()
			if err == nil {
				t.Fatal("the start succeeded")
			}
			if took := time.Since(began); took > 20*time.Second {
				t.Errorf("the failed start took %s", took)
			}
			if !strings.Contains(stderr.String(), c.says) {
				t.Errorf("kube-apiserver's stderr %q does not say %q", stderr.String(), c.says)
			}
		})
	}
}
