//! Where the binaries come from: `FAULTLINE_UPSTREAM_BIN` (or `Options::bin_dir`), else
//! `ci/upstream.sh` for the ones needed (a warm cache answers in well under a second).

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::Mutex;

/// Names the script's exit codes (ci/upstream.sh): 3 no usable Go, 4 a refused module.
const EXIT_NO_GO: i32 = 3;
const EXIT_REFUSED: i32 = 4;

/// One build at a time from this process: tests start in parallel, and two cold builds of the
/// same binaries would only share two cores.
static BUILD: Mutex<()> = Mutex::const_new(());

/// The repository's `ci/upstream.sh`.
pub fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ci/upstream.sh")
}

/// Turns a skip into a failure when `FAULTLINE_UPSTREAM_REQUIRE` is set (CI's upstream tier,
/// which has just built the binaries and must not pass by skipping).
pub(crate) fn skip(reason: String) -> Error {
    match std::env::var("FAULTLINE_UPSTREAM_REQUIRE") {
        Ok(v) if !v.is_empty() && v != "0" => Error::Required(reason),
        _ => Error::Skip(reason),
    }
}

/// The directory holding every binary in `names`.
pub(crate) async fn locate(explicit: Option<&Path>, names: &[&str]) -> Result<PathBuf> {
    if std::env::var("FAULTLINE_UPSTREAM").as_deref() == Ok("off") {
        return Err(skip(
            "FAULTLINE_UPSTREAM=off: the real control plane is not used in this run".into(),
        ));
    }
    let from_env = std::env::var_os("FAULTLINE_UPSTREAM_BIN")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    if let Some(dir) = explicit.map(Path::to_path_buf).or(from_env) {
        let missing: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| !dir.join(n).is_file())
            .collect();
        if missing.is_empty() {
            return Ok(dir);
        }
        return Err(skip(format!(
            "{} has no {}: run `bash ci/upstream.sh {}` and point FAULTLINE_UPSTREAM_BIN at the directory it prints",
            dir.display(),
            missing.join(", "),
            missing.join(" ")
        )));
    }
    build(names).await
}

async fn build(names: &[&str]) -> Result<PathBuf> {
    let _one_at_a_time = BUILD.lock().await;
    let script = script();
    let mut child = tokio::process::Command::new("bash")
        .arg(&script)
        .args(names)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| skip(format!("cannot run bash {}: {e}", script.display())))?;
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    // The script's progress (cold builds take minutes) goes on to our stderr as it comes.
    let progress = tokio::spawn(async move {
        let mut last = String::new();
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            eprintln!("{line}");
            if line.starts_with("upstream: ") {
                last = line;
            }
        }
        last
    });
    let mut out = String::new();
    let mut lines = BufReader::new(stdout).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        out = line;
    }
    let status = child
        .wait()
        .await
        .map_err(Error::io("waiting for ci/upstream.sh"))?;
    let last = progress.await.unwrap_or_default();
    match status.code() {
        Some(0) => Ok(PathBuf::from(out.trim())),
        Some(EXIT_NO_GO) | Some(EXIT_REFUSED) => Err(skip(last)),
        code => Err(Error::Build {
            binaries: names.join(" "),
            code,
            line: last,
        }),
    }
}
