//! Captured logs: the controller's stdout/stderr and the node components' logs (from
//! `NodeOps::subscribe_logs`), kept with their arrival time so log expectations can count
//! matches since an anchor and measure rates. Consumers wait on a version counter (a
//! `tokio::sync::watch`), so nothing polls.

use crate::provider::{LogLine, LogSource};
use parking_lot::Mutex;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::{broadcast, watch};

#[derive(Clone, Debug)]
pub struct Stamped {
    pub at: Instant,
    pub line: LogLine,
}

#[derive(Clone)]
pub struct LogStore {
    lines: Arc<Mutex<Vec<Stamped>>>,
    version: watch::Sender<u64>,
    dir: Option<PathBuf>,
}

impl LogStore {
    /// `dir`: where to also write `<source>[-<node>].log` files.
    pub fn new(dir: Option<PathBuf>) -> LogStore {
        if let Some(d) = &dir {
            let _ = std::fs::create_dir_all(d);
        }
        LogStore {
            lines: Arc::new(Mutex::new(vec![])),
            version: watch::channel(0).0,
            dir,
        }
    }

    pub fn push(&self, line: LogLine) {
        if let Some(d) = &self.dir {
            let file = match (&line.source, &line.node) {
                (LogSource::Controller, _) => "controller.log".to_string(),
                (LogSource::Kubelet, Some(n)) => format!("kubelet-{n}.log"),
                (LogSource::CsiPlugin, Some(n)) => format!("csi-plugin-{n}.log"),
                (LogSource::Kubelet, None) => "kubelet.log".to_string(),
                (LogSource::CsiPlugin, None) => "csi-plugin.log".to_string(),
            };
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(d.join(file))
            {
                let _ = writeln!(f, "{}", line.text);
            }
        }
        let n = {
            let mut v = self.lines.lock();
            v.push(Stamped {
                at: Instant::now(),
                line,
            });
            v.len() as u64
        };
        self.version.send_replace(n);
    }

    /// Lines from index `from` on.
    pub fn since(&self, from: usize) -> Vec<Stamped> {
        let v = self.lines.lock();
        v.get(from..).map(|s| s.to_vec()).unwrap_or_default()
    }

    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    /// Forward a broadcast receiver (controller output, a NodeOps log stream) into the store.
    pub fn attach(&self, mut rx: broadcast::Receiver<LogLine>) -> tokio::task::JoinHandle<()> {
        let store = self.clone();
        tokio::spawn(async move {
            loop {
                match rx.recv().await {
                    Ok(line) => store.push(line),
                    Err(broadcast::error::RecvError::Lagged(n)) => store.push(LogLine {
                        source: LogSource::Controller,
                        node: None,
                        text: format!("faultline: {n} log lines lost (reader lagged)"),
                    }),
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        })
    }

    /// The last `n` lines of a source, for failure reports.
    pub fn tail(&self, source: LogSource, n: usize) -> Vec<String> {
        let v = self.lines.lock();
        let mut out: Vec<String> = v
            .iter()
            .rev()
            .filter(|s| s.line.source == source)
            .take(n)
            .map(|s| match &s.line.node {
                Some(node) => format!("[{node}] {}", s.line.text),
                None => s.line.text.clone(),
            })
            .collect();
        out.reverse();
        out
    }
}
