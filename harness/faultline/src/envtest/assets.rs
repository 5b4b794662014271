//! The KUBEBUILDER_ASSETS directory: `kube-apiserver` and `etcd` are two-line scripts that exec
//! this binary's `envtest` modes (the binary's absolute path, so the directory works from any
//! working directory, as envtest's own cache does), `kubectl` a symlink to a real kubectl.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// What was written, and a note for the user when kubectl was not found.
#[derive(Debug)]
pub struct Written {
    pub kubectl: Option<PathBuf>,
    pub note: Option<String>,
}

/// A shell word in single quotes.
fn quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}

/// The script for one mode. `--help` is answered by the shell: envtest runs it before each
/// start to discover flags, and that exec is on the start's critical path.
fn script(exe: &Path, mode: &str, help: &str) -> String {
    format!(
        "#!/bin/sh\n# Written by `faultline envtest-assets`: envtest's {mode}, played by the faultline simulator.\ncase \"$1\" in --help | -h)\n  cat <<'FAULTLINE_HELP_END'\n{help}FAULTLINE_HELP_END\n  exit 0 ;;\nesac\nexec {} envtest {mode} \"$@\"\n",
        quote(exe)
    )
}

/// Replace `path` with `content` (mode 0755) in one rename, so a running suite never execs a
/// half-written script.
fn write_executable(path: &Path, content: &str) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let tmp = path.with_extension("faultline-tmp");
    std::fs::write(&tmp, content).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}

/// The kubectl to link: the one given, else the first on PATH.
fn find_kubectl(given: Option<&Path>) -> Result<Option<PathBuf>> {
    if let Some(p) = given {
        if !p.is_file() {
            bail!("--kubectl {}: no such file", p.display());
        }
        return Ok(Some(std::fs::canonicalize(p)?));
    }
    Ok(std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("kubectl"))
            .find(|p| p.is_file())
    }))
}

pub fn write(dir: &Path, exe: &Path, kubectl: Option<&Path>) -> Result<Written> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (mode, help) in [
        ("kube-apiserver", super::flags::APISERVER_HELP),
        ("etcd", super::flags::ETCD_HELP),
    ] {
        write_executable(&dir.join(mode), &script(exe, mode, help))?;
    }
    let link = dir.join("kubectl");
    let found = find_kubectl(kubectl)?;
    if link.symlink_metadata().is_ok() {
        std::fs::remove_file(&link).with_context(|| format!("replacing {}", link.display()))?;
    }
    let note = match &found {
        Some(k) => {
            std::os::unix::fs::symlink(k, &link)
                .with_context(|| format!("linking {} to {}", link.display(), k.display()))?;
            None
        }
        None => {
            write_executable(
                &link,
                "#!/bin/sh\necho 'faultline envtest: no kubectl here: run `faultline envtest-assets DIR --kubectl PATH` or put kubectl on PATH first' >&2\nexit 1\n",
            )?;
            Some("no kubectl found (--kubectl or PATH); envtest's KubeCtl helper will fail with that message".into())
        }
    };
    Ok(Written {
        kubectl: found,
        note,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_exec_the_binary_and_kubectl_is_linked() {
        let d = tempfile::tempdir().unwrap();
        let exe = d.path().join("it's faultline");
        std::fs::write(&exe, "").unwrap();
        let kubectl = d.path().join("kubectl-real");
        std::fs::write(&kubectl, "").unwrap();
        let assets = d.path().join("assets");
        let w = write(&assets, &exe, Some(&kubectl)).unwrap();
        assert!(w.note.is_none());
        let api = std::fs::read_to_string(assets.join("kube-apiserver")).unwrap();
        assert!(
            api.ends_with(&format!(
                "exec '{}/it'\\''s faultline' envtest kube-apiserver \"$@\"\n",
                d.path().display()
            )),
            "{api}"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(assets.join("etcd"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
        // `--help` from the shell, the same text as the binary's.
        let help = std::process::Command::new(assets.join("kube-apiserver"))
            .arg("--help")
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8(help.stdout).unwrap(),
            super::super::flags::APISERVER_HELP
        );
        assert_eq!(
            std::fs::read_link(assets.join("kubectl")).unwrap(),
            std::fs::canonicalize(&kubectl).unwrap()
        );
        // Written again over itself (a second run) and with a missing kubectl.
        write(&assets, &exe, Some(&kubectl)).unwrap();
        let e = write(&assets, &exe, Some(&d.path().join("nope"))).unwrap_err();
        assert!(e.to_string().contains("no such file"), "{e}");
    }
}
