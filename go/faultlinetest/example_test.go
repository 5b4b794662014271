package faultlinetest_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"faultline.dev/go/faultlinetest"
)

// nodeReady is the node's Ready condition status ("True", "False", "Unknown").
func nodeReady(ctx context.Context, cs kubernetes.Interface, name string) (string, error) {
	n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return string(c.Status), nil
		}
	}
	return "", nil
}

// A node whose kubelet stops goes NotReady (Unknown) after the node lifecycle's grace period
// (40 s, 2 s at TimeScale 0.05) and comes back once the fault is healed.
func Example() {
	ctx := context.Background()
	sim, err := faultlinetest.Start(ctx, faultlinetest.Options{Nodes: 2, TimeScale: 0.05})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sim.Stop()
	cs := kubernetes.NewForConfigOrDie(sim.RESTConfig())

	is := func(want string) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			got, err := nodeReady(ctx, cs, "worker-01")
			return got == want, err
		}
	}
	if _, err := faultlinetest.WaitFor(ctx, 30*time.Second, is("True")); err != nil {
		fmt.Println("never Ready:", err)
		return
	}
	fault, err := sim.Inject(ctx, "worker-01", faultlinetest.KubeletStop())
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := faultlinetest.WaitFor(ctx, 30*time.Second, is("Unknown")); err != nil {
		fmt.Println("never NotReady:", err)
		return
	}
	fmt.Println("worker-01 is NotReady with its kubelet stopped")
	if err := fault.Heal(ctx); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := faultlinetest.WaitFor(ctx, 30*time.Second, is("True")); err != nil {
		fmt.Println("never Ready again:", err)
		return
	}
	fmt.Println("and Ready again once healed")
	// Output:
	// worker-01 is NotReady with its kubelet stopped
	// and Ready again once healed
}

// WaitFor returns the time a condition took to hold, or an error wrapping ErrBudget.
func ExampleWaitFor() {
	start := time.Now()
	took, err := faultlinetest.WaitFor(context.Background(), time.Second, func(context.Context) (bool, error) {
		return time.Since(start) > 50*time.Millisecond, nil
	})
	fmt.Println(err == nil, took >= 50*time.Millisecond && took < time.Second)
	_, err = faultlinetest.WaitFor(context.Background(), 50*time.Millisecond, func(context.Context) (bool, error) {
		return false, nil
	})
	fmt.Println(err)
	// Output:
	// true true
	// not within 50ms: budget exceeded
}
