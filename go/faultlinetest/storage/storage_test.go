package storage_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"faultline.dev/go/faultlinetest"
	"faultline.dev/go/faultlinetest/storage"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const node = "worker-01"

// env is one case's view of the cluster: its namespace, its claim and pod (pinned to node).
type env struct {
	sim *faultlinetest.Sim
	cs  *kubernetes.Clientset
	ns  string
}

func (e env) claim(ctx context.Context, mode corev1.PersistentVolumeAccessMode) error {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: e.ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{mode},
			StorageClassName: ptr("longhorn"),
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			},
		},
	}
	_, err := e.cs.CoreV1().PersistentVolumeClaims(e.ns).Create(ctx, pvc, metav1.CreateOptions{})
	return err
}

func (e env) pod(ctx context.Context) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: e.ns},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"kubernetes.io/hostname": node},
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36",
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}},
		},
	}
	_, err := e.cs.CoreV1().Pods(e.ns).Create(ctx, pod, metav1.CreateOptions{})
	return err
}

// event holds once an Event about the pod has the reason and a message containing says.
func (e env) event(reason, says string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		evs, err := e.cs.CoreV1().Events(e.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=app"})
		if err != nil {
			return false, err
		}
		var seen []string
		for _, ev := range evs.Items {
			if ev.Reason == reason && strings.Contains(ev.Message, says) {
				return true, nil
			}
			seen = append(seen, ev.Reason+": "+ev.Message)
		}
		return false, fmt.Errorf("no %s event saying %q among %q", reason, says, seen)
	}
}

func (e env) running(ctx context.Context) (bool, error) {
	p, err := e.cs.CoreV1().Pods(e.ns).Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	return p.Status.Phase == corev1.PodRunning, nil
}

// volumeInUse holds when the node's status.volumesInUse lists the claim's volume (want) or not.
func (e env) volumeInUse(want bool) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		pvc, err := e.cs.CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, "data", metav1.GetOptions{})
		if err != nil || pvc.Spec.VolumeName == "" {
			return false, fmt.Errorf("claim not bound: %v", err)
		}
		n, err := e.cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		in := slices.ContainsFunc(n.Status.VolumesInUse, func(v corev1.UniqueVolumeName) bool {
			return strings.HasSuffix(string(v), pvc.Spec.VolumeName)
		})
		return in == want, nil
	}
}

// pluginRestarts is the restart count of the CSI plugin container on node.
func (e env) pluginRestarts(ctx context.Context) (int32, error) {
	pods, err := e.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{
		LabelSelector: "app=longhorn-csi-plugin", FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return 0, err
	}
	for _, p := range pods.Items {
		for _, c := range p.Status.ContainerStatuses {
			if c.Name == "longhorn-csi-plugin" {
				return c.RestartCount, nil
			}
		}
	}
	return 0, fmt.Errorf("no longhorn-csi-plugin container on %s", node)
}

func (e env) stalePods(want int) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		pods, err := e.cs.CoreV1().Pods("snapshots").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
		if err != nil {
			return false, err
		}
		return len(pods.Items) == want, nil
	}
}

// nodeReady holds when node's Ready condition has status want and its message contains says.
func (e env) nodeReady(want corev1.ConditionStatus, says string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		n, err := e.cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == want && strings.Contains(c.Message, says), nil
			}
		}
		return false, nil
	}
}

// both holds when a and b do.
func both(a, b func(context.Context) (bool, error)) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		if ok, err := a(ctx); !ok || err != nil {
			return ok, err
		}
		return b(ctx)
	}
}

// heldFor holds once cond has held for d without a break: what a fault keeps, not a lag.
func heldFor(d time.Duration, cond func(context.Context) (bool, error)) func(context.Context) (bool, error) {
	var since time.Time
	return func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if !ok || err != nil {
			since = time.Time{}
			return false, err
		}
		if since.IsZero() {
			since = time.Now()
		}
		return time.Since(since) >= d, nil
	}
}

// registered waits until the CSI plugin on node runs and its driver is in the node's CSINode
// (the DaemonSet's pod starts after the node is Ready).
func registered(ctx context.Context, cs *kubernetes.Clientset) error {
	_, err := faultlinetest.WaitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		n, err := cs.StorageV1().CSINodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(n.Spec.Drivers, func(d storagev1.CSINodeDriver) bool {
			return d.Name == "driver.longhorn.io"
		}), nil
	})
	return err
}

func ptr[T any](v T) *T { return &v }

// A storage fault's case: set-up, the fault, what the API shows while it is injected and once
// it is healed.
type storageCase struct {
	op func(e env) faultlinetest.Operation
	// before runs before the injection (the claim and pod of a fault that hits a running pod).
	before func(ctx context.Context, e env) error
	// after runs after it (the pod of a fault that hits its mount).
	after    func(ctx context.Context, e env) error
	injected func(e env) func(context.Context) (bool, error)
	healed   func(e env) func(context.Context) (bool, error)
}

func claimAndPod(mode corev1.PersistentVolumeAccessMode) func(ctx context.Context, e env) error {
	return func(ctx context.Context, e env) error {
		if err := e.claim(ctx, mode); err != nil {
			return err
		}
		return e.pod(ctx)
	}
}

func runningPod(ctx context.Context, e env) error {
	if err := claimAndPod(corev1.ReadWriteOnce)(ctx, e); err != nil {
		return err
	}
	_, err := faultlinetest.WaitFor(ctx, 30*time.Second, e.running)
	return err
}

func healedRunning(e env) func(context.Context) (bool, error) { return e.running }

var cases = map[string]storageCase{
	"csiPluginDown": {
		op:    func(env) faultlinetest.Operation { return storage.CSIPluginDown(node) },
		after: claimAndPod(corev1.ReadWriteOnce),
		injected: func(e env) func(context.Context) (bool, error) {
			return e.event("FailedMount", "connect: connection refused")
		},
		healed: healedRunning,
	},
	"csiDriverUnregistered": {
		op:    func(env) faultlinetest.Operation { return storage.CSIDriverUnregistered(node, "") },
		after: claimAndPod(corev1.ReadWriteOnce),
		injected: func(e env) func(context.Context) (bool, error) {
			return e.event("FailedAttachVolume", "CSINode "+node+" does not contain driver driver.longhorn.io")
		},
		healed: healedRunning,
	},
	"ioErrors": {
		op:    func(env) faultlinetest.Operation { return storage.IOErrors(node) },
		after: claimAndPod(corev1.ReadWriteOnce),
		injected: func(e env) func(context.Context) (bool, error) {
			return e.event("FailedMount", "input/output error")
		},
		healed: healedRunning,
	},
	"hungNfs": {
		op:    func(env) faultlinetest.Operation { return storage.HungNFS(node) },
		after: claimAndPod(corev1.ReadWriteMany),
		injected: func(e env) func(context.Context) (bool, error) {
			return e.event("FailedMount", "DeadlineExceeded")
		},
		healed: healedRunning,
	},
	"staleDeviceMount": {
		op: func(e env) faultlinetest.Operation {
			return storage.StaleDeviceMount(node, storage.PVC(e.ns+"/data"), "", "")
		},
		before: runningPod,
		// The pod goes; its volume's device mount does not, so the node keeps it in use.
		after: func(ctx context.Context, e env) error {
			return e.cs.CoreV1().Pods(e.ns).Delete(ctx, "app", metav1.DeleteOptions{GracePeriodSeconds: ptr[int64](0)})
		},
		// Held 2 s: without the fault the volume leaves volumesInUse within about 0.5 s.
		injected: func(e env) func(context.Context) (bool, error) {
			return heldFor(2*time.Second, func(ctx context.Context) (bool, error) {
				_, err := e.cs.CoreV1().Pods(e.ns).Get(ctx, "app", metav1.GetOptions{})
				if err == nil {
					return false, fmt.Errorf("pod still there")
				}
				return e.volumeInUse(true)(ctx)
			})
		},
		healed: func(e env) func(context.Context) (bool, error) { return e.volumeInUse(false) },
	},
	"kubeletWorkersSaturated": {
		op: func(env) faultlinetest.Operation { return storage.KubeletWorkersSaturated(node, 2) },
		// The PLEG relist hangs on the stale pods' sandboxes: Ready=False after its 3 min
		// threshold (9 s at TimeScale 0.05).
		injected: func(e env) func(context.Context) (bool, error) {
			return both(e.stalePods(2), e.nodeReady(corev1.ConditionFalse, "PLEG is not healthy"))
		},
		healed: func(e env) func(context.Context) (bool, error) {
			return both(e.stalePods(0), e.nodeReady(corev1.ConditionTrue, ""))
		},
	},
}

// Every storage fault injected on a simulated cluster, seen through the API (the Events the
// kubelet and the attach/detach controller write, the node's volumes in use, the pods), then
// healed. csiPluginRestart, one-shot, is TestCSIPluginRestart.
func TestStorageFaults(t *testing.T) {
	sim := faultlinetest.StartT(t, faultlinetest.Options{Nodes: 1, TimeScale: 0.05})
	cs := kubernetes.NewForConfigOrDie(sim.RESTConfig())
	if err := registered(context.Background(), cs); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(cases))
	for k := range cases {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		c := cases[key]
		t.Run(key, func(t *testing.T) {
			ctx := context.Background()
			e := env{sim: sim, cs: cs, ns: strings.ToLower(key)}
			if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if c.before != nil {
				if err := c.before(ctx, e); err != nil {
					t.Fatalf("before the fault: %v", err)
				}
			}
			op := c.op(e)
			if op.Key != key {
				t.Fatalf("case %s builds %s", key, op.Key)
			}
			fault, err := sim.InjectOperation(ctx, op)
			if err != nil {
				t.Fatal(err)
			}
			if !fault.Held {
				t.Fatalf("%s is one-shot", key)
			}
			if c.after != nil {
				if err := c.after(ctx, e); err != nil {
					t.Fatalf("after the fault: %v", err)
				}
			}
			took, err := faultlinetest.WaitFor(ctx, 30*time.Second, c.injected(e))
			if err != nil {
				t.Fatalf("injected: %v", err)
			}
			t.Logf("%s: seen after %s", key, took.Round(time.Millisecond))
			if err := fault.Heal(ctx); err != nil {
				t.Fatal(err)
			}
			took, err = faultlinetest.WaitFor(ctx, 30*time.Second, c.healed(e))
			if err != nil {
				t.Fatalf("healed: %v", err)
			}
			t.Logf("%s: healed after %s", key, took.Round(time.Millisecond))
		})
	}
}

// csiPluginRestart is one-shot: the plugin container restarts once, nothing is left to heal.
func TestCSIPluginRestart(t *testing.T) {
	sim := faultlinetest.StartT(t, faultlinetest.Options{Nodes: 1, TimeScale: 0.05})
	ctx := context.Background()
	e := env{sim: sim, cs: kubernetes.NewForConfigOrDie(sim.RESTConfig())}
	if err := registered(ctx, e.cs); err != nil {
		t.Fatal(err)
	}
	var before int32
	if _, err := faultlinetest.WaitFor(ctx, 20*time.Second, func(ctx context.Context) (bool, error) {
		var err error
		before, err = e.pluginRestarts(ctx)
		return err == nil, err
	}); err != nil {
		t.Fatal(err)
	}
	fault, err := sim.InjectOperation(ctx, storage.CSIPluginRestart(node))
	if err != nil {
		t.Fatal(err)
	}
	if fault.Held {
		t.Fatal("csiPluginRestart is held")
	}
	if _, err := faultlinetest.WaitFor(ctx, 20*time.Second, func(ctx context.Context) (bool, error) {
		n, err := e.pluginRestarts(ctx)
		return n == before+1, err
	}); err != nil {
		t.Fatalf("the plugin container did not restart once: %v", err)
	}
}

// Every storage operation of the catalogue has a constructor here, and every constructor builds
// one: a new catalogue entry without its Go constructor fails this test.
func TestEveryCatalogueStorageFaultHasAConstructor(t *testing.T) {
	sim := faultlinetest.StartT(t, faultlinetest.Options{APIOnly: true, Nodes: 1})
	cat, err := sim.Catalogue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, o := range cat.Operations {
		if o.Area == "storage" {
			want = append(want, o.Key)
		}
	}
	var got []string
	for _, op := range storage.All(node) {
		got = append(got, op.Key)
		if op.Node() != node {
			t.Errorf("%s: node %q", op.Key, op.Node())
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("Go storage constructors %v, the catalogue's storage operations %v", got, want)
	}
	for _, key := range want {
		if _, ok := cases[key]; !ok && key != "csiPluginRestart" {
			t.Errorf("%s: no test case injects it", key)
		}
	}
}
