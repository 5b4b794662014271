// Command judge runs controller-runtime's own envtest-based test packages against two
// KUBEBUILDER_ASSETS directories (the real kube-apiserver + etcd, and faultline's drop-in) and
// compares them spec by spec: both pass counts, the specs that pass on the real pair only, and
// the start time of an envtest Environment on each as a ratio. ci/envtest-judge.sh drives it.
//
//	judge -real DIR -sim DIR -out DIR [-pkgs envtest,client] [-starts 5] [-timeout 20m]
//
// Each package's test binary is built once (`go test -c`) and run in its source directory
// (its testdata is relative) through `go tool test2json`; Ginkgo suites are counted by their
// specs (`-ginkgo.json-report`), plain Go tests by their top-level results. Exit status: 0 when
// every spec and test that passes on the real pair passes on the sim, 1 otherwise, 2 when the
// judge itself could not run.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

const module = "sigs.k8s.io/controller-runtime/pkg/"

// outcome of one spec or test.
type outcome int

const (
	passed outcome = iota
	failed
	skipped
)

// result of one package on one assets directory: outcomes by spec/test name (a name that
// occurs n times is suffixed #2..#n).
type result struct {
	outcomes map[string]outcome
	note     string // why there are no results, when there are none
	elapsed  time.Duration
}

func (r result) count(o outcome) int {
	n := 0
	for _, v := range r.outcomes {
		if v == o {
			n++
		}
	}
	return n
}

func main() {
	realDir := flag.String("real", "", "KUBEBUILDER_ASSETS of the real kube-apiserver and etcd")
	simDir := flag.String("sim", "", "KUBEBUILDER_ASSETS written by faultline envtest-assets")
	out := flag.String("out", "", "directory for test binaries, logs and reports")
	pkgs := flag.String("pkgs", "envtest,client", "controller-runtime packages under pkg/, comma-separated")
	starts := flag.Int("starts", 5, "envtest Environment starts timed on each (0: none)")
	timeout := flag.Duration("timeout", 20*time.Minute, "per package and assets directory")
	flag.Parse()
	logf.SetLogger(logr.Discard())
	if *realDir == "" || *simDir == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "judge: -real, -sim and -out are required")
		os.Exit(2)
	}
	code, err := run(*realDir, *simDir, *out, strings.Split(*pkgs, ","), *starts, *timeout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "judge:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

func run(realDir, simDir, out string, pkgs []string, starts int, timeout time.Duration) (int, error) {
	sides := []struct{ label, dir string }{{"real", realDir}, {"sim", simDir}}
	for _, s := range sides {
		for _, bin := range []string{"kube-apiserver", "etcd"} {
			if _, err := os.Stat(filepath.Join(s.dir, bin)); err != nil {
				return 0, fmt.Errorf("-%s %s: %w", s.label, s.dir, err)
			}
		}
	}
	if err := os.MkdirAll(filepath.Join(out, "bin"), 0o755); err != nil {
		return 0, err
	}
	var diff strings.Builder
	type row struct {
		pkg       string
		real, sim result
		realOnly  []string
	}
	var rows []row
	for _, p := range pkgs {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		bin, dir, err := build(p, out)
		if err != nil {
			return 0, err
		}
		r := row{pkg: p}
		for _, s := range sides {
			res := runPackage(p, bin, dir, s.label, s.dir, out, timeout)
			fmt.Fprintf(os.Stderr, "judge: %-12s %-4s %4d passed %4d failed %4d skipped in %s%s\n", p, s.label,
				res.count(passed), res.count(failed), res.count(skipped), res.elapsed.Round(time.Second), note(res))
			if s.label == "real" {
				r.real = res
			} else {
				r.sim = res
			}
		}
		for name, o := range r.real.outcomes {
			if o == passed && r.sim.outcomes[name] != passed {
				r.realOnly = append(r.realOnly, name)
			}
		}
		sort.Strings(r.realOnly)
		for _, n := range r.realOnly {
			fmt.Fprintf(&diff, "%s\t%s\n", p, n)
		}
		rows = append(rows, r)
	}
	if err := os.WriteFile(filepath.Join(out, "real-only.txt"), []byte(diff.String()), 0o644); err != nil {
		return 0, err
	}

	fmt.Printf("%-12s %14s %14s %10s %10s\n", "package", "real passed", "sim passed", "real only", "time r/s")
	var tr, ts, tro, tn, tsn int
	var dr, ds time.Duration
	for _, r := range rows {
		n := len(r.real.outcomes)
		fmt.Printf("%-12s %8d/%-5d %8d/%-5d %10d %4.0fs/%.0fs\n", r.pkg, r.real.count(passed), n,
			r.sim.count(passed), len(r.sim.outcomes), len(r.realOnly), r.real.elapsed.Seconds(), r.sim.elapsed.Seconds())
		tr += r.real.count(passed)
		ts += r.sim.count(passed)
		tro += len(r.realOnly)
		tn += n
		tsn += len(r.sim.outcomes)
		dr += r.real.elapsed
		ds += r.sim.elapsed
	}
	fmt.Printf("%-12s %8d/%-5d %8d/%-5d %10d %4.0fs/%.0fs\n", "total", tr, tn, ts, tsn, tro, dr.Seconds(), ds.Seconds())
	fmt.Printf("real pair: %d passed; sim: %d passed; passing on the real pair only: %d (%s)\n",
		tr, ts, tro, filepath.Join(out, "real-only.txt"))

	if starts > 0 {
		rt, err := startTime(realDir, starts)
		if err != nil {
			return 0, fmt.Errorf("timing the real pair: %w", err)
		}
		st, err := startTime(simDir, starts)
		if err != nil {
			return 0, fmt.Errorf("timing the sim: %w", err)
		}
		fmt.Printf("envtest Environment start (median of %d): real %s, sim %s, ratio %.1fx\n",
			starts, rt.Round(time.Millisecond), st.Round(time.Millisecond), float64(rt)/float64(st))
	}
	if tro > 0 {
		return 1, nil
	}
	return 0, nil
}

func note(r result) string {
	if r.note == "" {
		return ""
	}
	return " (" + r.note + ")"
}

// build compiles the package's test binary; it returns the binary and the package's directory.
func build(pkg, out string) (string, string, error) {
	path := module + pkg
	bin, err := filepath.Abs(filepath.Join(out, "bin", strings.ReplaceAll(pkg, "/", "_")+".test"))
	if err != nil {
		return "", "", err
	}
	cmd := exec.Command("go", "test", "-c", "-o", bin, path)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", "", fmt.Errorf("go test -c %s: %w", path, err)
	}
	dir, err := exec.Command("go", "list", "-f", "{{.Dir}}", path).Output()
	if err != nil {
		return "", "", fmt.Errorf("go list %s: %w", path, err)
	}
	return bin, strings.TrimSpace(string(dir)), nil
}

// event is one line of `go tool test2json`.
type event struct {
	Action string
	Test   string
	Output string
}

// spec is the part of a Ginkgo spec report the judge reads.
type spec struct {
	ContainerHierarchyTexts []string
	LeafNodeType            string
	LeafNodeText            string
	State                   string
}

func runPackage(pkg, bin, dir, label, assets, out string, timeout time.Duration) result {
	res := result{outcomes: map[string]outcome{}}
	sideDir := filepath.Join(out, label)
	_ = os.MkdirAll(sideDir, 0o755)
	base := strings.ReplaceAll(pkg, "/", "_")
	report, _ := filepath.Abs(filepath.Join(sideDir, base+".json"))
	_ = os.Remove(report)
	logFile, err := os.Create(filepath.Join(sideDir, base+".log"))
	if err != nil {
		res.note = err.Error()
		return res
	}
	defer logFile.Close()

	cmd := exec.Command("go", "tool", "test2json", "-p", module+pkg, bin,
		"-test.v=test2json", "-test.count=1", "-test.timeout="+timeout.String(),
		"-ginkgo.json-report="+report, "-ginkgo.no-color")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KUBEBUILDER_ASSETS="+assets)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		res.note = err.Error()
		return res
	}
	cmd.Stderr = logFile
	start := time.Now()
	if err := cmd.Start(); err != nil {
		res.note = err.Error()
		return res
	}
	suites := map[string]bool{} // tests that ran a Ginkgo suite: counted by their specs
	tests := map[string]outcome{}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		if ev.Output != "" {
			_, _ = io.WriteString(logFile, ev.Output)
			if ev.Test != "" && strings.Contains(ev.Output, "Running Suite:") {
				suites[strings.SplitN(ev.Test, "/", 2)[0]] = true
			}
		}
		if ev.Test == "" || strings.Contains(ev.Test, "/") {
			continue
		}
		switch ev.Action {
		case "pass":
			tests[ev.Test] = passed
		case "fail":
			tests[ev.Test] = failed
		case "skip":
			tests[ev.Test] = skipped
		}
	}
	_ = cmd.Wait()
	res.elapsed = time.Since(start)
	for t, o := range tests {
		if !suites[t] {
			res.outcomes["go test "+t] = o
		}
	}
	if len(suites) > 0 {
		data, err := os.ReadFile(report)
		if err != nil {
			res.note = "no Ginkgo report: the suite did not finish"
			return res
		}
		var reports []struct{ SpecReports []spec }
		if err := json.Unmarshal(data, &reports); err != nil {
			res.note = "unreadable Ginkgo report: " + err.Error()
			return res
		}
		for _, r := range reports {
			for _, s := range r.SpecReports {
				if s.LeafNodeType != "It" {
					continue
				}
				name := strings.Join(append(append([]string{}, s.ContainerHierarchyTexts...), s.LeafNodeText), " ")
				key := name
				for i := 2; ; i++ {
					if _, dup := res.outcomes[key]; !dup {
						break
					}
					key = fmt.Sprintf("%s #%d", name, i)
				}
				switch s.State {
				case "passed":
					res.outcomes[key] = passed
				case "skipped", "pending":
					res.outcomes[key] = skipped
				default:
					res.outcomes[key] = failed
				}
			}
		}
	}
	return res
}

// startTime is the median time envtest.Environment.Start takes with these assets.
func startTime(assets string, n int) (time.Duration, error) {
	old, had := os.LookupEnv("KUBEBUILDER_ASSETS")
	defer func() {
		if had {
			_ = os.Setenv("KUBEBUILDER_ASSETS", old)
		} else {
			_ = os.Unsetenv("KUBEBUILDER_ASSETS")
		}
	}()
	if err := os.Setenv("KUBEBUILDER_ASSETS", assets); err != nil {
		return 0, err
	}
	var times []time.Duration
	for i := 0; i < n; i++ {
		env := &envtest.Environment{}
		t0 := time.Now()
		if _, err := env.Start(); err != nil {
			_ = env.Stop()
			return 0, err
		}
		times = append(times, time.Since(t0))
		if err := env.Stop(); err != nil {
			return 0, err
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	return times[len(times)/2], nil
}
