//! Helpers shared by the benchmarks: percentiles, process memory, clients of a `SimServer`.

use anyhow::Result;
use faultline_sim::SimServer;
use std::time::Duration;

/// The `p`-th percentile (0..=100) of `v` by nearest rank; `v` need not be sorted. NaN if empty.
pub fn percentile(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let rank = ((p / 100.0) * s.len() as f64).ceil() as usize;
    s[rank.clamp(1, s.len()) - 1]
}

pub fn median(v: &[f64]) -> f64 {
    percentile(v, 50.0)
}

pub fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// (VmRSS, VmHWM) of this process in bytes, from /proc/self/status.
pub fn rss_bytes() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse::<u64>().ok())
            .map(|kib| kib * 1024)
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

pub const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// A kube-rs client configured from the server's kubeconfig, as a user's program would be.
pub async fn kube_client(server: &SimServer) -> Result<kube::Client> {
    let kc = kube::config::Kubeconfig::from_yaml(&server.kubeconfig_yaml())?;
    let cfg = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
        .await?;
    Ok(kube::Client::try_from(cfg)?)
}

/// Heap bytes a `serde_json::Value` holds, estimated from its shape (the sizes of the map
/// entries, index tables, strings and arrays it allocates; allocator rounding not counted).
/// Used to split the RSS per pod into what the stored objects take and what is elsewhere.
pub fn value_heap_bytes(v: &serde_json::Value) -> usize {
    use serde_json::Value;
    const VALUE: usize = std::mem::size_of::<Value>();
    // An IndexMap entry: hash, key, value; the index table: one usize and a control byte per slot.
    const ENTRY: usize = std::mem::size_of::<usize>() + std::mem::size_of::<String>() + VALUE;
    match v {
        Value::String(s) => s.capacity(),
        Value::Array(a) => a.capacity() * VALUE + a.iter().map(value_heap_bytes).sum::<usize>(),
        Value::Object(m) if m.is_empty() => 0,
        Value::Object(m) => {
            let slots = (m.len() * 8 / 7).next_power_of_two().max(4);
            m.len() * ENTRY
                + slots * (std::mem::size_of::<usize>() + 1)
                + m.iter()
                    .map(|(k, v)| k.capacity() + value_heap_bytes(v))
                    .sum::<usize>()
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 99.0), 99.0);
        assert_eq!(percentile(&v, 100.0), 100.0);
        assert_eq!(percentile(&[3.0, 1.0, 2.0], 0.0), 1.0);
        assert!(percentile(&[], 50.0).is_nan());
    }

    #[test]
    fn rss_is_read_from_proc() {
        let (rss, hwm) = rss_bytes();
        assert!(rss > 0 && hwm >= rss, "rss {rss} hwm {hwm}");
    }
}
