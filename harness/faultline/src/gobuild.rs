//! A controller built from Go source (`build: {go: {module, package}}` in the suite): `go build`
//! into a cache keyed by a content hash of the module's sources, as `ci/upstream.sh` caches the
//! upstream binaries. The key covers go.mod, go.sum and every non-test `.go` file of the module
//! (nested modules and `testdata` excluded), the package, this build's flags and the platform;
//! not the Go version, so a warm cache runs no go command at all and a machine without Go still
//! runs a controller built before. A binary is built into a temporary directory beside its
//! place and renamed into it, so an interrupted build leaves nothing half-built.

use sha2::{Digest, Sha256};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// How the binary is built; part of the cache key (change it and every binary is built anew).
/// A plain `go build`, no -trimpath and CGO_ENABLED as the environment has it: the packages then
/// come from the Go build cache that `go test` and `go vet` in the module fill (another
/// configuration compiles every dependency again: 2.5 minutes for controller-runtime on 2
/// cores, against seconds). CGO_ENABLED is added to the key.
const RECIPE: &str = "go build GOFLAGS=-mod=readonly GOTOOLCHAIN=local recipe=1";

/// Where a Go toolchain is looked for when neither `GO` nor PATH names one (Go's own installer).
const FALLBACK_GO: &str = "/usr/local/go/bin/go";

/// Why a controller could not be built.
#[derive(Debug, thiserror::Error)]
pub enum GoBuildError {
    #[error("no Go toolchain to build it with: install Go (go.dev/dl) and put `go` on PATH, or set GO=/path/to/go")]
    NoGo,
    #[error("GO={0} is not an executable file: point GO at the go command, or unset it to use `go` on PATH")]
    NotExecutable(PathBuf),
    #[error("reading the Go module at {dir}: {source}")]
    Read {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("writing the build cache at {dir}: {source}")]
    Cache {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("running {go}: {source}")]
    Spawn { go: PathBuf, source: std::io::Error },
    #[error("`go build {package}` in {dir} failed ({status}):\n{output}")]
    Failed {
        package: String,
        dir: PathBuf,
        status: std::process::ExitStatus,
        output: String,
    },
}

/// A binary ready to run, and whether this call built it (and how long that took).
#[derive(Debug)]
pub struct Built {
    pub binary: PathBuf,
    pub took: Option<Duration>,
}

/// One build at a time from this process: scenarios run in parallel (`--jobs`), and the first
/// one's build fills the cache for the others.
static BUILD: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The cache root: FAULTLINE_GO_CACHE, else $XDG_CACHE_HOME/faultline/go, else
/// ~/.cache/faultline/go.
pub fn cache_root() -> PathBuf {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("FAULTLINE_GO_CACHE")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("faultline/go")))
        .unwrap_or_else(|| {
            var("HOME")
                .unwrap_or_else(|| PathBuf::from("/root"))
                .join(".cache/faultline/go")
        })
}

/// The binary of `package` in the Go module at `module`, built unless the cache has it.
pub async fn build(module: &Path, package: &str, cache: &Path) -> Result<Built, GoBuildError> {
    let module = std::path::absolute(module).unwrap_or_else(|_| module.to_path_buf());
    let name = binary_name(&module, package);
    let key = source_key(&module, package)?;
    let dir = cache.join(format!("{name}-{key}"));
    let binary = dir.join(&name);
    if binary.is_file() {
        return Ok(Built { binary, took: None });
    }
    let _one_at_a_time = BUILD.lock().await;
    if binary.is_file() {
        return Ok(Built { binary, took: None });
    }
    let go = find_go(
        std::env::var_os("GO"),
        std::env::var_os("PATH"),
        Path::new(FALLBACK_GO),
    )?;
    let cache_err = |source| GoBuildError::Cache {
        dir: cache.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(cache).map_err(cache_err)?;
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".building-{name}-"))
        .tempdir_in(cache)
        .map_err(cache_err)?;
    let started = Instant::now();
    let out = tokio::process::Command::new(&go)
        .args(["build", "-o"])
        .arg(tmp.path().join(&name))
        .arg(package)
        .current_dir(&module)
        .env("GOFLAGS", "-mod=readonly")
        .env("GOTOOLCHAIN", "local")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|source| GoBuildError::Spawn {
            go: go.clone(),
            source,
        })?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = text.lines().collect();
        return Err(GoBuildError::Failed {
            package: package.to_string(),
            dir: module,
            status: out.status,
            output: lines[lines.len().saturating_sub(20)..].join("\n"),
        });
    }
    // The temporary directory becomes the keyed one by a rename: all there, or not at all.
    let tmp = tmp.keep();
    if let Err(e) = std::fs::rename(&tmp, &dir) {
        let _ = std::fs::remove_dir_all(&tmp);
        // Another process got there first with the same sources: its binary is as good.
        if !binary.is_file() {
            return Err(cache_err(e));
        }
    }
    Ok(Built {
        binary,
        took: Some(started.elapsed()),
    })
}

/// The binary's name: the package's last element, or the module directory's for `.`.
fn binary_name(module: &Path, package: &str) -> String {
    let from_package = package
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .filter(|p| !p.is_empty() && *p != ".");
    from_package
        .map(str::to_string)
        .or_else(|| module.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "controller".into())
}

/// 16 hex digits of SHA-256 over the recipe, the platform, the package and every source file
/// (its path relative to the module, its length, its bytes), in path order.
pub fn source_key(module: &Path, package: &str) -> Result<String, GoBuildError> {
    let mut files = vec![];
    collect_sources(module, module, &mut files)?;
    files.sort();
    let mut h = Sha256::new();
    let cgo = std::env::var("CGO_ENABLED").unwrap_or_default();
    for part in [
        RECIPE,
        std::env::consts::OS,
        std::env::consts::ARCH,
        &cgo,
        package,
    ] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    for rel in files {
        let bytes = std::fs::read(module.join(&rel)).map_err(|source| GoBuildError::Read {
            dir: module.to_path_buf(),
            source,
        })?;
        h.update(rel.to_string_lossy().as_bytes());
        h.update([0]);
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    Ok(h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

fn collect_sources(module: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), GoBuildError> {
    let read_err = |source| GoBuildError::Read {
        dir: module.to_path_buf(),
        source,
    };
    let entries = std::fs::read_dir(dir).map_err(read_err)?;
    for entry in entries {
        let entry = entry.map_err(read_err)?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let kind = entry.file_type().map_err(read_err)?;
        if kind.is_dir() {
            // What the go command ignores too, and nested modules (not part of this build).
            if name.starts_with('.') || name.starts_with('_') || name == "testdata" {
                continue;
            }
            if path.join("go.mod").is_file() {
                continue;
            }
            collect_sources(module, &path, out)?;
        } else if (dir == module && (name == "go.mod" || name == "go.sum"))
            || (name.ends_with(".go") && !name.ends_with("_test.go"))
        {
            out.push(path.strip_prefix(module).unwrap_or(&path).to_path_buf());
        }
    }
    Ok(())
}

/// The go command: `GO` (a path, or a name looked up on PATH), else `go` on PATH, else Go's
/// default install location.
pub fn find_go(
    env_go: Option<OsString>,
    path: Option<OsString>,
    fallback: &Path,
) -> Result<PathBuf, GoBuildError> {
    let on_path = |name: &Path| {
        path.as_ref().and_then(|p| {
            std::env::split_paths(p)
                .map(|d| d.join(name))
                .find(|c| is_executable(c))
        })
    };
    if let Some(go) = env_go.filter(|g| !g.is_empty()).map(PathBuf::from) {
        if go.components().count() > 1 {
            return is_executable(&go)
                .then_some(go.clone())
                .ok_or(GoBuildError::NotExecutable(go));
        }
        return on_path(&go).ok_or(GoBuildError::NotExecutable(go));
    }
    on_path(Path::new("go"))
        .or_else(|| is_executable(fallback).then(|| fallback.to_path_buf()))
        .ok_or(GoBuildError::NoGo)
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exe(dir: &Path, name: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join(name);
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[test]
    fn the_go_command_is_found_by_go_then_path_then_the_install_location() {
        let d = tempfile::tempdir().unwrap();
        let bin = d.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let go = exe(&bin, "go");
        let other = exe(d.path(), "go-1.26");
        let path = Some(OsString::from(format!("/nonexistent:{}", bin.display())));
        let none = Path::new("/nonexistent/go");
        // (GO, PATH, the install location, the go command found or the error's text)
        type Case<'a> = (
            Option<&'a str>,
            Option<OsString>,
            &'a Path,
            Result<PathBuf, &'a str>,
        );
        let cases: Vec<Case> = vec![
            (None, path.clone(), none, Ok(go.clone())),
            (Some(""), path.clone(), none, Ok(go.clone())),
            (
                Some(other.to_str().unwrap()),
                path.clone(),
                none,
                Ok(other.clone()),
            ),
            (Some("go"), path.clone(), none, Ok(go.clone())),
            (
                Some("/nonexistent/go"),
                path.clone(),
                none,
                Err("GO=/nonexistent/go is not an executable file"),
            ),
            (
                Some(bin.to_str().unwrap()),
                path.clone(),
                none,
                Err("is not an executable file"),
            ),
            (None, Some("/nonexistent".into()), &go, Ok(go.clone())),
            (
                None,
                Some("/nonexistent".into()),
                none,
                Err("no Go toolchain to build it with"),
            ),
            (None, None, none, Err("no Go toolchain to build it with")),
        ];
        for (i, (env_go, path, fallback, want)) in cases.into_iter().enumerate() {
            let got = find_go(env_go.map(OsString::from), path, fallback);
            match (got, want) {
                (Ok(g), Ok(w)) => assert_eq!(g, w, "case {i}"),
                (Err(e), Err(w)) => assert!(e.to_string().contains(w), "case {i}: {e}"),
                (got, want) => panic!("case {i}: {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn the_key_follows_the_sources_and_nothing_else() {
        let d = tempfile::tempdir().unwrap();
        let m = d.path();
        std::fs::write(m.join("go.mod"), "module x\n").unwrap();
        std::fs::write(m.join("go.sum"), "").unwrap();
        std::fs::write(m.join("main.go"), "package main\n").unwrap();
        std::fs::create_dir_all(m.join("internal/c")).unwrap();
        std::fs::write(m.join("internal/c/c.go"), "package c\n").unwrap();
        let key = || source_key(m, ".").unwrap();
        let first = key();
        assert_eq!(first.len(), 16);
        assert_eq!(key(), first, "the same sources, the same key");
        // Not sources: tests, testdata, a nested module, hidden directories, other files.
        std::fs::write(m.join("internal/c/c_test.go"), "package c\n").unwrap();
        std::fs::create_dir_all(m.join("testdata")).unwrap();
        std::fs::write(m.join("testdata/x.go"), "package x\n").unwrap();
        std::fs::create_dir_all(m.join("tools")).unwrap();
        std::fs::write(m.join("tools/go.mod"), "module tools\n").unwrap();
        std::fs::write(m.join("tools/t.go"), "package tools\n").unwrap();
        std::fs::create_dir_all(m.join(".git")).unwrap();
        std::fs::write(m.join(".git/y.go"), "package y\n").unwrap();
        std::fs::write(m.join("README.md"), "hello\n").unwrap();
        assert_eq!(key(), first, "what the build does not read does not count");
        assert_ne!(
            source_key(m, "./cmd/x").unwrap(),
            first,
            "the package counts"
        );
        // Sources: a changed file, go.sum, a moved file.
        std::fs::write(m.join("internal/c/c.go"), "package c // changed\n").unwrap();
        let changed = key();
        assert_ne!(changed, first);
        std::fs::write(m.join("go.sum"), "x v1 h1:abc\n").unwrap();
        let summed = key();
        assert_ne!(summed, changed);
        std::fs::rename(m.join("internal/c/c.go"), m.join("internal/c/d.go")).unwrap();
        assert_ne!(key(), summed, "a file's path counts");
    }

    #[test]
    fn binary_names() {
        let m = Path::new("/src/go-operator");
        assert_eq!(binary_name(m, "."), "go-operator");
        assert_eq!(binary_name(m, "./cmd/manager"), "manager");
        assert_eq!(binary_name(m, "./cmd/manager/"), "manager");
    }
}
