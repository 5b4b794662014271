//! A controller built from Go source (`build: {go: {module}}`): the runner builds it with
//! `go build` into a cache keyed by its sources before the scenario's cluster starts, runs the
//! cached binary the next time, and a missing toolchain is one harness error naming the scenario
//! and the controller, not a panic.

use std::path::Path;
use std::process::Command;

mod common;
use common::{text, BIN, HEAD};

/// A suite whose controller `op` is the Go module `op/` (no dependencies: it builds in a second),
/// and one scenario that waits for its log line.
fn suite(dir: &Path) {
    std::fs::create_dir_all(dir.join("op")).unwrap();
    std::fs::write(
        dir.join("op/go.mod"),
        "module example.com/op\n\ngo 1.25.0\n",
    )
    .unwrap();
    std::fs::write(dir.join("op/go.sum"), "").unwrap();
    std::fs::write(
        dir.join("op/main.go"),
        "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n\t\"time\"\n)\n\nfunc main() {\n\tfmt.Println(\"op starting\", os.Args[1:])\n\tfor {\n\t\tfmt.Println(\"op reconciled\")\n\t\ttime.Sleep(100 * time.Millisecond)\n\t}\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("faultline.yaml"),
        "apiVersion: faultline.dev/v1alpha1\nkind: Suite\ncontrollers:\n  op:\n    build: {go: {module: op}}\n    args: [--from-the-suite]\n    readyPattern: op starting\ndefaults: {expectWithin: 5s, stepTimeout: 10s}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("go-build.yaml"),
        format!("{HEAD}metadata: {{name: go-build}}\nspec:\n  cluster: {{sim: {{apiOnly: true}}}}\n  controller: {{ref: op, args: [--from-the-scenario]}}\n  steps:\n    - expect:\n        name: args\n        log: {{source: controller, pattern: 'op starting \\[--from-the-suite --from-the-scenario\\]'}}\n        after: start\n"),
    )
    .unwrap();
}

fn run(dir: &Path, cache: &Path, go: Option<&str>) -> (i32, String) {
    let mut c = Command::new(BIN);
    c.args(["run", "go-build.yaml", "--verbose"])
        .current_dir(dir)
        .env("FAULTLINE_GO_CACHE", cache);
    if let Some(go) = go {
        c.env("GO", go);
    }
    let out = c.output().unwrap();
    (out.status.code().unwrap_or(-1), text(&out))
}

#[test]
fn a_go_controller_is_built_once_then_run_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    suite(dir.path());
    let (code, out) = run(dir.path(), cache.path(), None);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("controller op built in "), "{out}");
    let built: Vec<_> = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        built.len() == 1 && built[0].starts_with("op-"),
        "one keyed directory, no temporary one left: {built:?}"
    );
    // Warm: no go command runs at all, so a machine without Go runs it too.
    let (code, out) = run(dir.path(), cache.path(), Some("/nonexistent/go"));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("controller op cached: "), "{out}");
    // A changed source is another key: built anew.
    let main = dir.path().join("op/main.go");
    let src = std::fs::read_to_string(&main).unwrap();
    std::fs::write(&main, src.replace("op reconciled", "op reconciled again")).unwrap();
    let (code, out) = run(dir.path(), cache.path(), None);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("controller op built in "), "{out}");
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 2);
}

/// A cold build (16 s on a fresh machine's empty Go cache) is the harness's time: the
/// scenario's `within 5s after start` budget counts from when its cluster starts, after it.
#[test]
fn a_slow_build_does_not_count_against_budgets_after_start() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    suite(dir.path());
    let go = dir.path().join("slow-go");
    std::fs::write(&go, "#!/bin/sh\nsleep 6\nexec go \"$@\"\n").unwrap();
    std::fs::set_permissions(&go, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (code, out) = run(dir.path(), cache.path(), Some(go.to_str().unwrap()));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("controller op built in "), "{out}");
}

#[test]
fn a_missing_go_toolchain_is_one_error_naming_the_scenario_and_the_controller() {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    suite(dir.path());
    let (code, out) = run(dir.path(), cache.path(), Some("/nonexistent/go"));
    assert_eq!(code, 2, "{out}");
    let wanted = "ERROR go-build: building controller `op` (op): GO=/nonexistent/go is not an executable file: point GO at the go command, or unset it to use `go` on PATH";
    assert!(
        out.lines().any(|l| l.trim_start() == wanted),
        "missing `{wanted}` in:\n{out}"
    );
    assert!(out.contains(" 1 error(s)"), "{out}");
    assert!(!out.contains("panicked"), "{out}");
    // Nothing ran: no cluster was started for it.
    assert!(!out.contains("cluster starting"), "{out}");
}

#[test]
fn a_failing_build_shows_the_go_command_s_error() {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    suite(dir.path());
    std::fs::write(
        dir.path().join("op/main.go"),
        "package main\n\nfunc main() { undefined() }\n",
    )
    .unwrap();
    let (code, out) = run(dir.path(), cache.path(), None);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("building controller `op` (op): `go build .` in ")
            && out.contains("undefined: undefined"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_dir(cache.path()).unwrap().count(),
        0,
        "nothing half-built is kept"
    );
}

/// The fixture itself: gofmt, go vet and its table-driven tests (`go test` fills the Go build
/// cache the runner's build then reads).
#[test]
fn the_go_operator_fixture_is_gofmt_vet_and_test_clean() {
    let dir = common::repo().join("fixtures/go-operator");
    let go = faultline::gobuild::find_go(
        std::env::var_os("GO"),
        std::env::var_os("PATH"),
        Path::new("/usr/local/go/bin/go"),
    )
    .expect("a Go toolchain (the scenario pack builds the fixture with it)");
    let gofmt = go.with_file_name("gofmt");
    let unformatted = Command::new(&gofmt)
        .args(["-l", "."])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(unformatted.status.success(), "{}", text(&unformatted));
    assert_eq!(String::from_utf8_lossy(&unformatted.stdout), "", "gofmt -l");
    for args in [&["vet", "./..."][..], &["test", "-count=1", "./..."][..]] {
        let out = Command::new(&go)
            .args(args)
            .current_dir(&dir)
            .env("GOFLAGS", "-mod=readonly")
            .output()
            .unwrap();
        assert!(out.status.success(), "go {args:?}:\n{}", text(&out));
    }
}
