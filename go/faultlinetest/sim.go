// Package faultlinetest starts a faultline simulated cluster for Go tests: a real Kubernetes
// API (the sim's), kubelets, a scheduler and Longhorn-like storage at a chosen speed, a
// *rest.Config for any client, node, storage (package storage) and API faults injected and
// healed through the sim's fault endpoints (/faultline/v1/...), and waits with budgets that
// return the time taken. Attach reaches the fault endpoints of a server started elsewhere: an
// envtest Environment on faultline's drop-in with FAULTLINE_ENVTEST_FAULTS=1.
//
// It drives the faultline binary (`faultline sim up`): FAULTLINE_BIN names it, else `faultline`
// on PATH, else it is built with cargo from the faultline repository this package sits in (or
// FAULTLINE_REPO). It works from testing.T (StartT) and from Ginkgo (StartT(GinkgoT(), ...), or
// Start and Stop in BeforeSuite/AfterSuite).
package faultlinetest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Options of a simulated cluster.
type Options struct {
	// Worker nodes (worker-01, worker-02, ...), besides the control-plane node. Default 3.
	Nodes int
	// Multiplies every simulated duration (heartbeats, grace periods, backoffs): 0.05 runs the
	// node lifecycle's 40 s grace in 2 s. Default 1 (real time).
	TimeScale float64
	// Serve the API alone: static nodes, no kubelets, scheduler or storage.
	APIOnly bool
	// How long the start may take (the first call may build the binary). Default 10 minutes.
	StartBudget time.Duration
}

// Sim is a running simulated cluster.
type Sim struct {
	cmd        *exec.Cmd
	dir        string
	kubeconfig string
	config     *rest.Config
	http       *httpClient

	mu     sync.Mutex
	faults []*Fault
	done   chan struct{}
	output *strings.Builder
}

// ErrBudget is wrapped by errors of waits and starts that ran out of their budget.
var ErrBudget = errors.New("budget exceeded")

// Start starts a simulated cluster; Stop ends it (and heals the faults still active).
func Start(ctx context.Context, opts Options) (*Sim, error) {
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	if opts.TimeScale == 0 {
		opts.TimeScale = 1
	}
	if opts.StartBudget == 0 {
		opts.StartBudget = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartBudget)
	defer cancel()
	bin, err := Binary(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "faultlinetest-")
	if err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	args := []string{"sim", "up", "--nodes", strconv.Itoa(opts.Nodes), "--kubeconfig", kubeconfig,
		"--listen", "127.0.0.1:0", "--time-scale", strconv.FormatFloat(opts.TimeScale, 'g', -1, 64)}
	if opts.APIOnly {
		args = append(args, "--api-only")
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	out := &strings.Builder{}
	cmd.Stderr = &lockedWriter{w: out}
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	s := &Sim{cmd: cmd, dir: dir, kubeconfig: kubeconfig, done: make(chan struct{}), output: out}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		signalled := false
		for sc.Scan() {
			if !signalled && strings.HasPrefix(sc.Text(), "faultline sim: kubeconfig written to ") {
				close(ready)
				signalled = true
			}
		}
		_ = cmd.Wait()
		close(s.done)
	}()
	select {
	case <-ready:
	case <-s.done:
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("faultline sim up exited before it was ready: %s", strings.TrimSpace(out.String()))
	case <-ctx.Done():
		s.kill()
		return nil, fmt.Errorf("faultline sim up not ready within %s: %w", opts.StartBudget, ErrBudget)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		s.kill()
		return nil, fmt.Errorf("reading %s: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 1000, 2000
	s.config = cfg
	if s.http, err = newHTTPClient(cfg); err != nil {
		s.kill()
		return nil, err
	}
	return s, nil
}

// Attach reaches the fault endpoints of a simulated API server started by someone else: an
// envtest Environment on the drop-in (KUBEBUILDER_ASSETS from `faultline envtest-assets`) with
// FAULTLINE_ENVTEST_FAULTS=1, or a `faultline sim up` whose kubeconfig cfg was read from. cfg
// must be the cluster admin's (envtest's Environment.Config is): the endpoints answer 403 to
// anyone else. Inject, InjectAPI, InjectOperation and Heal work as on a started sim; Stop heals
// what is left and leaves the server running.
func Attach(cfg *rest.Config) (*Sim, error) {
	h, err := newHTTPClient(cfg)
	if err != nil {
		return nil, err
	}
	s := &Sim{config: rest.CopyConfig(cfg), http: h}
	// A probe that needs the endpoints and changes nothing, so a server without them fails here
	// rather than at the first Inject.
	var cat Catalogue
	if err := h.do(context.Background(), "GET", "/faultline/v1/catalogue", nil, &cat); err != nil {
		return nil, fmt.Errorf("faultlinetest: %s has no fault endpoints for this user (an envtest drop-in needs FAULTLINE_ENVTEST_FAULTS=1, and the admin's config): %w", cfg.Host, err)
	}
	return s, nil
}

// TB is what StartT needs of a test: *testing.T, *testing.B and Ginkgo's GinkgoT() have it.
type TB interface {
	Helper()
	Cleanup(func())
	Fatalf(format string, args ...any)
}

// StartT starts a simulated cluster for one test and stops it when the test ends; a failed
// start fails the test.
func StartT(t TB, opts Options) *Sim {
	t.Helper()
	s, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("faultlinetest: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Fatalf("faultlinetest: %v", err)
		}
	})
	return s
}

// RESTConfig is a client configuration with full access (the cluster's admin).
func (s *Sim) RESTConfig() *rest.Config { return rest.CopyConfig(s.config) }

// Kubeconfig is the path of the cluster's kubeconfig file (for kubectl or a controller process);
// empty for an attached server.
func (s *Sim) Kubeconfig() string { return s.kubeconfig }

// Stop heals the faults still active (newest first), then stops the cluster. Healing errors are
// returned after the cluster is stopped.
func (s *Sim) Stop() error {
	s.mu.Lock()
	active := append([]*Fault(nil), s.faults...)
	s.mu.Unlock()
	var errs []error
	for i := len(active) - 1; i >= 0; i-- {
		if err := active[i].Heal(context.Background()); err != nil {
			errs = append(errs, err)
		}
	}
	if s.cmd == nil {
		// Attached: the server is someone else's to stop.
		return errors.Join(errs...)
	}
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			s.kill()
		}
	}
	_ = os.RemoveAll(s.dir)
	return errors.Join(errs...)
}

func (s *Sim) kill() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	_ = os.RemoveAll(s.dir)
}

// Binary finds the faultline binary: FAULTLINE_BIN, else `faultline` on PATH, else it builds it
// (`cargo build -p faultline --bin faultline`) in FAULTLINE_REPO or the faultline repository
// around the working directory.
func Binary(ctx context.Context) (string, error) {
	if b := os.Getenv("FAULTLINE_BIN"); b != "" {
		if _, err := os.Stat(b); err != nil {
			return "", fmt.Errorf("FAULTLINE_BIN: %w", err)
		}
		return b, nil
	}
	if b, err := exec.LookPath("faultline"); err == nil {
		return b, nil
	}
	repo := os.Getenv("FAULTLINE_REPO")
	if repo == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "harness", "faultline", "Cargo.toml")); err == nil {
				repo = d
				break
			}
			if filepath.Dir(d) == d {
				return "", errors.New("no faultline binary: set FAULTLINE_BIN, put faultline on PATH, or set FAULTLINE_REPO to a faultline checkout to build it")
			}
		}
	}
	build := exec.CommandContext(ctx, "cargo", "build", "-q", "-p", "faultline", "--bin", "faultline")
	build.Dir = repo
	if msg, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("cargo build -p faultline in %s: %w: %s", repo, err, msg)
	}
	target := os.Getenv("CARGO_TARGET_DIR")
	if target == "" {
		target = filepath.Join(repo, "target")
	}
	return filepath.Join(target, "debug", "faultline"), nil
}

// lockedWriter collects the sim's stderr for error messages.
type lockedWriter struct {
	mu sync.Mutex
	w  io.StringWriter
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.WriteString(string(p))
}
