package faultlinetest_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"faultline.dev/go/faultlinetest"
)

// TestGinkgoSuite runs the Ginkgo specs below under `go test`, as a controller's suite_test.go
// does: the package works from Ginkgo's BeforeSuite/AfterSuite and from GinkgoT().
func TestGinkgoSuite(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "faultlinetest from Ginkgo")
}

var (
	suiteSim *faultlinetest.Sim
	suiteCS  kubernetes.Interface
)

var _ = BeforeSuite(func(ctx SpecContext) {
	var err error
	suiteSim, err = faultlinetest.Start(ctx, faultlinetest.Options{Nodes: 1, TimeScale: 0.05})
	Expect(err).NotTo(HaveOccurred())
	suiteCS, err = kubernetes.NewForConfig(suiteSim.RESTConfig())
	Expect(err).NotTo(HaveOccurred())
}, NodeTimeout(2*time.Minute))

var _ = AfterSuite(func() {
	if suiteSim != nil {
		Expect(suiteSim.Stop()).To(Succeed())
	}
})

// readyOf is the Ready condition status of node `name`, "" when it has none yet.
func readyOf(ctx context.Context, cs kubernetes.Interface, name string) string {
	n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return string(c.Status)
		}
	}
	return ""
}

var _ = Describe("a simulated cluster in a Ginkgo suite", func() {
	It("takes a node down with a kubelet stop and back with the heal", func(ctx SpecContext) {
		Eventually(func() string { return readyOf(ctx, suiteCS, "worker-01") }).
			WithTimeout(30 * time.Second).Should(Equal("True"))
		fault, err := suiteSim.Inject(ctx, "worker-01", faultlinetest.KubeletStop())
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() string { return readyOf(ctx, suiteCS, "worker-01") }).
			WithTimeout(30 * time.Second).Should(Equal("Unknown"))
		Expect(fault.Heal(ctx)).To(Succeed())
		Eventually(func() string { return readyOf(ctx, suiteCS, "worker-01") }).
			WithTimeout(30 * time.Second).Should(Equal("True"))
	}, SpecTimeout(2*time.Minute))

	It("starts a cluster of its own through GinkgoT(), stopped when the spec ends", func(ctx SpecContext) {
		own := faultlinetest.StartT(GinkgoT(), faultlinetest.Options{APIOnly: true})
		cs, err := kubernetes.NewForConfig(own.RESTConfig())
		Expect(err).NotTo(HaveOccurred())
		_, err = cs.CoreV1().Namespaces().Create(ctx,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "only-here"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		// The suite's cluster is another one: the namespace is not there.
		_, err = suiteCS.CoreV1().Namespaces().Get(ctx, "only-here", metav1.GetOptions{})
		Expect(err).To(HaveOccurred())
	}, SpecTimeout(2*time.Minute))
})
