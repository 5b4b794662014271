//! `--pause-on-failure` / `--pause-at`: the console side of a paused scenario. It prints the
//! timeline up to the pause, whether the cluster is frozen (sim), where the cluster is
//! (kubeconfig, `export KUBECONFIG=...`, the `faultline node` commands that work on this
//! provider) and waits for a line on stdin - Enter - or for Ctrl-C, which the signal
//! handler turns into "continue" while a scenario is paused (`resume_if_paused`). Stdin is read
//! on a thread of its own, so nothing here assumes a terminal: a closed stdin continues at once.

use crate::runner::{PauseInfo, Pauser};
use futures::future::BoxFuture;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::{mpsc, Mutex, Notify};

pub struct ConsolePauser {
    /// One scenario holds at a time (with --jobs, the others wait their turn at their pause).
    turn: Mutex<mpsc::UnboundedReceiver<String>>,
    paused: AtomicBool,
    resume: Notify,
    faultline_bin: PathBuf,
}

impl ConsolePauser {
    pub fn new(faultline_bin: PathBuf) -> ConsolePauser {
        let (tx, rx) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
            // EOF: dropping the sender makes every later wait return at once.
        });
        ConsolePauser {
            turn: Mutex::new(rx),
            paused: AtomicBool::new(false),
            resume: Notify::new(),
            faultline_bin,
        }
    }

    /// Ctrl-C while paused continues the run instead of interrupting it. Returns whether a
    /// scenario was paused.
    pub fn resume_if_paused(&self) -> bool {
        if self.paused.load(Ordering::SeqCst) {
            self.resume.notify_one();
            true
        } else {
            false
        }
    }
}

/// What to print while paused.
pub fn render(info: &PauseInfo, faultline_bin: &std::path::Path) -> String {
    let kc = std::path::absolute(&info.kubeconfig).unwrap_or_else(|_| info.kubeconfig.clone());
    let mut o = format!(
        "\nfaultline: PAUSED scenario `{}`: {}\n",
        info.scenario, info.why
    );
    // What led here, before anything else: the timeline up to the pause.
    o += "  timeline:\n";
    for e in &info.timeline {
        let verdict = e
            .verdict
            .map(|v| format!(" [{}]", v.word()))
            .unwrap_or_default();
        o += &format!(
            "    T+{:<8} {}{verdict}\n",
            crate::report::model::ms(e.at_ms),
            e.text.replace('\n', " ")
        );
    }
    match info.frozen_at {
        Some(at) => o += &format!(
            "  the cluster is frozen: its clock stands at {} and its kubelets, scheduler and controllers wait; the API serves, and what you write is acted on when you continue; the controller under test is running\n",
            at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        ),
        None => o += "  the cluster goes on running (only the sim can be frozen); the controller under test is running\n",
    }
    if info.active_faults.is_empty() {
        o += "  no fault is active now\n";
    } else {
        o += "  active faults:\n";
        for f in &info.active_faults {
            o += &format!("    {f}\n");
        }
    }
    o += &format!("  kubeconfig: {}\n", kc.display());
    o += &format!("    export KUBECONFIG={}\n", kc.display());
    o += "    kubectl get nodes,pods -A -o wide\n";
    // The nodes the faults name, else every node.
    let mut nodes: Vec<&String> = info
        .nodes
        .iter()
        .filter(|n| info.active_faults.iter().any(|f| f.contains(n.as_str())))
        .collect();
    if nodes.is_empty() {
        nodes = info.nodes.iter().collect();
    }
    let bin = faultline_bin.display();
    let node_cmds = |o: &mut String| {
        for n in &nodes {
            *o += &format!("    {bin} node {n} logs kubelet --tail 50\n");
            *o += &format!("    {bin} node {n} mounts\n");
            *o += &format!("    {bin} node {n} service kubelet status\n");
        }
        if let Some(n) = nodes.first() {
            *o += &format!("    {bin} node {n} service kubelet restart   # also: reboot, power-cycle, logs csi-plugin\n");
        }
    };
    match info.provider {
        "sim" => {
            o += "  node operations (with KUBECONFIG exported as above):\n";
            node_cmds(&mut o);
        }
        "existing" => {
            o += "  node operations: when this cluster is a `faultline sim up`, with KUBECONFIG exported:\n";
            node_cmds(&mut o);
            o +=
                "  (on a real cluster `faultline node` does not apply: use your own node access)\n";
        }
        _ => {
            o += "  node operations: `faultline node` drives simulated nodes only; the kind nodes are containers:\n";
            o += "    docker ps --filter label=dev.faultline.cluster   # then: docker exec -it <node container> sh (docs/kind.md)\n";
        }
    }
    o += "  press Enter (or Ctrl-C) to continue: faults are healed, the controller stopped, the cluster torn down\n";
    o
}

impl Pauser for ConsolePauser {
    fn hold<'a>(&'a self, info: PauseInfo) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let mut lines = self.turn.lock().await;
            {
                let mut out = std::io::stdout().lock();
                let _ = out
                    .write_all(render(&info, &self.faultline_bin).as_bytes())
                    .and_then(|_| out.flush());
            }
            // Cleared however the hold ends (a scenario stopped while paused drops this future).
            struct Paused<'a>(&'a AtomicBool);
            impl Drop for Paused<'_> {
                fn drop(&mut self) {
                    self.0.store(false, Ordering::SeqCst);
                }
            }
            self.paused.store(true, Ordering::SeqCst);
            let _paused = Paused(&self.paused);
            let how = tokio::select! {
                l = lines.recv() => if l.is_some() { "Enter" } else { "stdin is closed" },
                _ = self.resume.notified() => "Ctrl-C",
            };
            println!("faultline: {how}: continuing scenario `{}` (healing faults, stopping the controller, tearing down)", info.scenario);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_kubeconfig_and_the_node_commands_of_the_faulted_node() {
        let info = PauseInfo {
            scenario: "s".into(),
            why: "before step `x`".into(),
            provider: "sim",
            kubeconfig: "/tmp/k/kubeconfig".into(),
            nodes: vec![
                "control-plane".into(),
                "worker-01".into(),
                "worker-02".into(),
            ],
            active_faults: vec!["hang: kubeletHang{node: worker-02}".into()],
            timeline: vec![
                crate::timeline::Entry {
                    at_ms: 1200,
                    kind: crate::timeline::EntryKind::Fault,
                    text: "fault hang injected".into(),
                    verdict: None,
                },
                crate::timeline::Entry {
                    at_ms: 2500,
                    kind: crate::timeline::EntryKind::Expect,
                    text: "expect pod-running".into(),
                    verdict: Some(crate::timeline::Verdict::Failed),
                },
            ],
            frozen_at: Some(chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap()),
        };
        let t = render(&info, std::path::Path::new("/bin/faultline"));
        assert!(t.contains("export KUBECONFIG=/tmp/k/kubeconfig"), "{t}");
        // The timeline comes first, the failing expectation's verdict with it.
        let timeline = t.find("  timeline:\n    T+1.2s").expect("timeline");
        assert!(
            timeline < t.find("kubeconfig:").unwrap()
                && t.contains("T+2.5s     expect pod-running [FAIL]"),
            "{t}"
        );
        assert!(
            t.contains("the cluster is frozen: its clock stands at 2027-01-15T08:00:00.000Z"),
            "{t}"
        );
        assert!(
            t.contains("/bin/faultline node worker-02 logs kubelet")
                && !t.contains("node worker-01"),
            "{t}"
        );
        let kind = render(
            &PauseInfo {
                provider: "kind",
                frozen_at: None,
                ..info
            },
            std::path::Path::new("/bin/faultline"),
        );
        assert!(
            !kind.contains("/bin/faultline node") && kind.contains("docker"),
            "{kind}"
        );
        assert!(kind.contains("the cluster goes on running"), "{kind}");
    }
}
