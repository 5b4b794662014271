//! What a simulated container answers to `exec`: the entries of the pod's
//! `sim.faultline.dev/exec` annotation first, then a few built-in commands whose output
//! follows from the command line or the pod object alone. Anything else fails like a
//! command the runtime cannot start, naming the annotation to add.
//!
//! The annotation is a YAML list; each entry matches one exact command line:
//!
//! ```yaml
//! sim.faultline.dev/exec: |
//!   - command: [cat, /etc/app/config.yaml]
//!     stdout: "mode: fast\n"
//!   - command: [sh, -c, ./migrate.sh]
//!     container: app          # optional: only this container
//!     stderr: "migration failed\n"
//!     exitCode: 2
//!   - command: [tee, /tmp/x]
//!     stdin: echo             # copy stdin to stdout until it closes, then print stdout
//! ```

use crate::apiserver::meta;
use serde::Deserialize;
use serde_json::Value;
use std::time::Duration;

pub const EXEC_ANNOTATION: &str = "sim.faultline.dev/exec";

/// What the process does with its streams.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Program {
    /// Copy stdin to stdout as it arrives, until stdin closes.
    pub echo_stdin: bool,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit_code: i32,
    /// How long the process runs before it writes its output and exits (`sleep N`).
    pub delay: Duration,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Entry {
    command: Vec<String>,
    #[serde(default)]
    container: Option<String>,
    #[serde(default)]
    stdout: String,
    #[serde(default)]
    stderr: String,
    #[serde(default)]
    exit_code: u8,
    #[serde(default)]
    stdin: StdinMode,
}

#[derive(Debug, Deserialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
enum StdinMode {
    #[default]
    Ignore,
    Echo,
}

/// The program `argv` runs in `container` of `pod`, or the error text the kubelet reports
/// (wrapped as "error executing command in container: ...").
pub fn resolve(pod: &Value, container: &str, argv: &[String]) -> Result<Program, String> {
    if let Some(text) = annotation(pod, EXEC_ANNOTATION) {
        let entries: Vec<Entry> = serde_yaml::from_str(text).map_err(|e| {
            format!(
                "pod {}/{}: annotation {}: {}",
                meta::namespace(pod),
                meta::name(pod),
                EXEC_ANNOTATION,
                e
            )
        })?;
        let hit = entries
            .into_iter()
            .find(|e| e.command == argv && e.container.as_deref().is_none_or(|c| c == container));
        if let Some(e) = hit {
            return Ok(Program {
                echo_stdin: e.stdin == StdinMode::Echo,
                stdout: e.stdout.into_bytes(),
                stderr: e.stderr.into_bytes(),
                exit_code: e.exit_code.into(),
                delay: Duration::ZERO,
            });
        }
    }
    builtin(pod, argv).ok_or_else(|| {
        format!(
            "the simulated container {:?} has no script for the command {:?}: add it to the pod annotation {}",
            container, argv, EXEC_ANNOTATION
        )
    })
}

pub fn annotation<'a>(pod: &'a Value, key: &str) -> Option<&'a str> {
    pod.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
}

/// Commands whose result does not depend on a filesystem or processes the sim lacks.
fn builtin(pod: &Value, argv: &[String]) -> Option<Program> {
    let (prog, args) = argv.split_first()?;
    let name = prog.rsplit('/').next().unwrap_or(prog);
    let out = |s: String| {
        Some(Program {
            stdout: s.into_bytes(),
            ..Default::default()
        })
    };
    match (name, args) {
        ("true", _) => Some(Program::default()),
        ("false", _) => Some(Program {
            exit_code: 1,
            ..Default::default()
        }),
        ("echo", [flag, rest @ ..]) if flag == "-n" => out(rest.join(" ")),
        ("echo", rest) => out(format!("{}\n", rest.join(" "))),
        ("cat", []) => Some(Program {
            echo_stdin: true,
            ..Default::default()
        }),
        ("hostname", []) => out(format!("{}\n", hostname(pod))),
        ("sleep", [secs]) => Some(Program {
            delay: seconds(secs)?,
            ..Default::default()
        }),
        ("sh" | "bash" | "ash", [c, script]) if c == "-c" => shell(pod, script),
        _ => None,
    }
}

fn seconds(s: &str) -> Option<Duration> {
    s.parse::<f64>()
        .ok()
        .filter(|s| (0.0..=3600.0).contains(s))
        .map(Duration::from_secs_f64)
}

/// `sh -c` with a script of built-in commands separated by `;` and no quoting, expansion or
/// redirection (`sleep 1; exit 3`, `cat`): anything richer needs a real shell.
fn shell(pod: &Value, script: &str) -> Option<Program> {
    if script
        .chars()
        .any(|c| "|&$<>`\"'(){}*?[]\\#~\n".contains(c))
    {
        return None;
    }
    let cmds: Vec<Vec<String>> = script
        .split(';')
        .map(|c| c.split_whitespace().map(String::from).collect::<Vec<_>>())
        .filter(|c| !c.is_empty())
        .collect();
    let mut prog = Program::default();
    for cmd in &cmds {
        match (cmd[0].as_str(), &cmd[1..]) {
            ("exit", []) => return Some(prog),
            ("exit", [code]) => {
                prog.exit_code = code.parse::<u8>().ok()?.into();
                return Some(prog);
            }
            _ => {
                let p = builtin(pod, cmd)?;
                if p.echo_stdin && cmds.len() > 1 {
                    return None;
                }
                prog.echo_stdin |= p.echo_stdin;
                prog.stdout.extend(p.stdout);
                prog.stderr.extend(p.stderr);
                prog.exit_code = p.exit_code;
                prog.delay += p.delay;
            }
        }
    }
    Some(prog)
}

/// A pod's hostname: `spec.hostname`, else its name cut to 63 characters.
fn hostname(pod: &Value) -> String {
    match meta::str_at(pod, "/spec/hostname") {
        Some(h) if !h.is_empty() => h.to_string(),
        _ => meta::name(pod).chars().take(63).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn argv(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    fn pod(script: &str) -> Value {
        json!({"metadata": {"name": "web-0", "namespace": "default", "annotations": {EXEC_ANNOTATION: script}}, "spec": {}})
    }

    #[test]
    fn scripted_entries_win_and_match_exact_command_lines() {
        let p = pod("- command: [cat, /etc/x]\n  stdout: \"x\\n\"\n- command: [migrate]\n  container: app\n  stderr: bad\n  exitCode: 2\n");
        assert_eq!(
            resolve(&p, "c", &argv(&["cat", "/etc/x"])).unwrap().stdout,
            b"x\n"
        );
        let m = resolve(&p, "app", &argv(&["migrate"])).unwrap();
        assert_eq!((m.exit_code, m.stderr.as_slice()), (2, &b"bad"[..]));
        let err = resolve(&p, "sidecar", &argv(&["migrate"])).unwrap_err();
        assert!(
            err.contains("no script for the command [\"migrate\"]")
                && err.contains(EXEC_ANNOTATION),
            "{err}"
        );
    }

    #[test]
    fn bad_annotations_name_the_pod_field_and_line() {
        let err = resolve(&pod("- command: [a]\n  stdot: x\n"), "c", &argv(&["a"])).unwrap_err();
        assert!(
            err.starts_with("pod default/web-0: annotation sim.faultline.dev/exec: ")
                && err.contains("stdot")
                && err.contains("line 2"),
            "{err}"
        );
        let err = resolve(
            &pod("- command: [a]\n  exitCode: 300\n"),
            "c",
            &argv(&["a"]),
        )
        .unwrap_err();
        assert!(err.contains("exitCode") || err.contains("300"), "{err}");
    }

    #[rstest::rstest]
    #[case(&["echo", "hello", "world"], b"hello world\n", 0)]
    #[case(&["/bin/echo", "-n", "x"], b"x", 0)]
    #[case(&["sh", "-c", "exit 7"], b"", 7)]
    #[case(&["/bin/sh", "-c", "sleep 0; echo a; false"], b"a\n", 1)]
    #[case(&["sh", "-c", "echo x; exit 3; echo y"], b"x\n", 3)]
    #[case(&["false"], b"", 1)]
    #[case(&["hostname"], b"web-0\n", 0)]
    fn builtins(#[case] cmd: &[&str], #[case] stdout: &[u8], #[case] code: i32) {
        let p = resolve(&json!({"metadata": {"name": "web-0"}}), "c", &argv(cmd)).unwrap();
        assert_eq!((p.stdout.as_slice(), p.exit_code), (stdout, code));
    }

    #[test]
    fn other_shell_scripts_are_not_guessed() {
        assert!(resolve(
            &json!({"metadata": {"name": "p"}}),
            "c",
            &argv(&["sh", "-c", "ls /"])
        )
        .is_err());
        assert!(resolve(
            &json!({"metadata": {"name": "p"}}),
            "c",
            &argv(&["sh", "-c", "echo $HOME"])
        )
        .is_err());
        assert!(
            resolve(
                &json!({"metadata": {"name": "p"}}),
                "c",
                &argv(&["sh", "-c", "cat"])
            )
            .unwrap()
            .echo_stdin
        );
        assert_eq!(
            resolve(
                &json!({"metadata": {"name": "p"}}),
                "c",
                &argv(&["sh", "-c", "sleep 1; exit 3"])
            )
            .unwrap()
            .delay,
            Duration::from_secs(1)
        );
    }
}
