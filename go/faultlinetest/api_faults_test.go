package faultlinetest_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"faultline.dev/go/faultlinetest"
)

// API faults reach the controller's requests as a struggling kube-apiserver answers them, and
// end when healed: errors by status code, latency by the time a request takes.
func TestAPIFaults(t *testing.T) {
	ctx := context.Background()
	sim := faultlinetest.StartT(t, faultlinetest.Options{APIOnly: true})
	cs := kubernetes.NewForConfigOrDie(sim.RESTConfig())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	get := func() (time.Duration, error) {
		start := time.Now()
		_, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "c", metav1.GetOptions{})
		return time.Since(start), err
	}
	for _, c := range []struct {
		name      string
		fault     faultlinetest.APIFault
		wantCode  int32
		wantSlow  time.Duration
		untouched func() error
	}{
		{
			name:     "every configmap get fails with 503",
			fault:    faultlinetest.APIErrors(1, http.StatusServiceUnavailable, []string{"get"}, []string{"configmaps"}),
			wantCode: http.StatusServiceUnavailable,
			untouched: func() error {
				_, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
				return err
			},
		},
		{
			name:     "gets answered 400ms late",
			fault:    faultlinetest.APILatency(400*time.Millisecond, []string{"get"}, nil),
			wantSlow: 400 * time.Millisecond,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := sim.InjectAPI(ctx, c.fault)
			if err != nil {
				t.Fatal(err)
			}
			took, err := get()
			if c.wantCode != 0 {
				var status apierrors.APIStatus
				if !apierrors.IsServiceUnavailable(err) || !asStatus(err, &status) || status.Status().Code != c.wantCode {
					t.Fatalf("get under the fault: %v, want HTTP %d", err, c.wantCode)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if took < c.wantSlow {
				t.Fatalf("get took %v, want at least %v", took, c.wantSlow)
			}
			if c.untouched != nil {
				if err := c.untouched(); err != nil {
					t.Fatalf("a request the fault does not match: %v", err)
				}
			}
			if err := f.Heal(ctx); err != nil {
				t.Fatal(err)
			}
			took, err = get()
			if err != nil || (c.wantSlow > 0 && took >= c.wantSlow) {
				t.Fatalf("after heal: %v in %v", err, took)
			}
		})
	}
	if _, err := sim.InjectAPI(ctx, faultlinetest.APIErrors(2, 500, nil, nil)); err == nil {
		t.Fatal("a rate of 2 was accepted")
	}
}

func asStatus(err error, into *apierrors.APIStatus) bool {
	s, ok := err.(apierrors.APIStatus)
	if ok {
		*into = s
	}
	return ok
}
