//! A recording `NodeOps` for tests: every apply and heal is recorded (in memory and, optionally,
//! as lines in a file, so a test can check a separate `faultline` process healed its faults
//! even after SIGINT). It can be told to panic or fail on chosen operations, and emits a kubelet
//! log line per call so log expectations can be exercised.
//!
//! Selected for the sim provider by the test-only environment variable
//! `FAULTLINE_TEST_NODE_OPS=<record-file>[;panic=<op>,...][;fail=<op>,...]`.

use super::*;
use parking_lot::Mutex;
use std::io::Write;
use std::path::PathBuf;

#[derive(Clone, Debug, Default)]
pub struct FakeConfig {
    pub record: Option<PathBuf>,
    /// Operation keys whose `apply` panics.
    pub panic_on: Vec<String>,
    /// Operation keys whose `apply` returns an error.
    pub fail_on: Vec<String>,
}

pub const ENV: &str = "FAULTLINE_TEST_NODE_OPS";

impl FakeConfig {
    pub fn from_env() -> anyhow::Result<Option<FakeConfig>> {
        let Ok(v) = std::env::var(ENV) else {
            return Ok(None);
        };
        let mut cfg = FakeConfig::default();
        for (i, part) in v.split(';').enumerate() {
            if i == 0 {
                if !part.is_empty() {
                    cfg.record = Some(PathBuf::from(part));
                }
                continue;
            }
            match part.split_once('=') {
                Some(("panic", ops)) => cfg.panic_on = ops.split(',').map(str::to_string).collect(),
                Some(("fail", ops)) => cfg.fail_on = ops.split(',').map(str::to_string).collect(),
                _ => anyhow::bail!(
                    "{ENV}: cannot parse `{part}` (expected panic=<op>,... or fail=<op>,...)"
                ),
            }
        }
        Ok(Some(cfg))
    }
}

/// One recorded call.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// "apply" or "heal".
    pub action: &'static str,
    pub op: NodeOperation,
}

pub struct FakeNodeOps {
    cfg: FakeConfig,
    calls: Mutex<Vec<Call>>,
    kubelet: broadcast::Sender<LogLine>,
    csi: broadcast::Sender<LogLine>,
}

impl FakeNodeOps {
    pub fn new(cfg: FakeConfig) -> FakeNodeOps {
        FakeNodeOps {
            cfg,
            calls: Mutex::new(vec![]),
            kubelet: broadcast::channel(1024).0,
            csi: broadcast::channel(1024).0,
        }
    }
    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().clone()
    }
    fn record(&self, action: &'static str, op: &NodeOperation) {
        self.calls.lock().push(Call {
            action,
            op: op.clone(),
        });
        if let Some(path) = &self.cfg.record {
            let line = format!(
                "{action} {}\n",
                serde_json::to_string(op).unwrap_or_default()
            );
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
            {
                let _ = f.write_all(line.as_bytes());
                let _ = f.sync_all();
            }
        }
        let _ = self.kubelet.send(LogLine {
            source: LogSource::Kubelet,
            node: op.node().map(str::to_string),
            text: format!("fake-node-ops: {action} {}", op.key()),
        });
    }
}

impl NodeOps for FakeNodeOps {
    fn apply<'a>(&'a self, op: &'a NodeOperation) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move {
            if self.cfg.panic_on.iter().any(|k| k == op.key()) {
                panic!("fake-node-ops: told to panic on {}", op.key());
            }
            if self.cfg.fail_on.iter().any(|k| k == op.key()) {
                anyhow::bail!("fake-node-ops: told to fail on {}", op.key());
            }
            self.record("apply", op);
            Ok(())
        })
    }
    fn heal<'a>(&'a self, op: &'a NodeOperation) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move {
            self.record("heal", op);
            Ok(())
        })
    }
    fn subscribe_logs(
        &self,
        _node: Option<&str>,
        source: LogSource,
    ) -> broadcast::Receiver<LogLine> {
        match source {
            LogSource::CsiPlugin => self.csi.subscribe(),
            _ => self.kubelet.subscribe(),
        }
    }
}
