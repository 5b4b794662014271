//! Clusters really stop: 100 clusters started and dropped in one binary free everything they
//! held (every task ends, so the API server is freed) and leave RSS within 10 % of where it
//! started. Alone in its binary so that no parallel test moves RSS. Linux with glibc only
//! (/proc/self/statm, malloc_trim).
#![cfg(all(target_os = "linux", target_env = "gnu"))]

use faultline_testing::Cluster;
use k8s_openapi::api::core::v1::Namespace;
use std::time::Duration;

/// Resident set size in bytes (Linux: /proc/self/statm, field 2, in pages of 4 KiB), after
/// asking glibc to give freed heap pages back (without it, RSS shows how fragmented the
/// allocator's arenas are rather than what the clusters still hold).
fn rss() -> u64 {
    // SAFETY: malloc_trim only releases free memory of the allocator; no pointer is involved.
    unsafe { libc::malloc_trim(0) };
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse::<u64>().ok())
        .expect("statm resident field")
        * 4096
}

/// Start a full cluster with one worker, use it, drop it; true when its API server was freed.
async fn start_use_drop(i: usize) -> bool {
    let c = Cluster::full()
        .workers(1)
        .time_scale(0.01)
        .seed(i as u64)
        .start()
        .await
        .expect("start");
    let ns: kube::Api<Namespace> = kube::Api::all(c.client());
    ns.get("kube-system").await.expect("request");
    let api = std::sync::Arc::downgrade(&c.sim().api);
    drop(ns);
    drop(c);
    // Aborted tasks are dropped at the runtime's next turn: within milliseconds, but a CI
    // machine running the rest of the suite once took longer than half a second. A leak never
    // drops them; 5 s tells the two apart.
    for _ in 0..1000 {
        if api.strong_count() == 0 {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_clusters_started_and_dropped_return_rss() {
    // Warm-up: lazy statics, the runtime's threads and the allocator's per-thread arenas reach
    // their steady size over the first clusters (about 20: RSS rises ~15 % over the first 5,
    // then stays flat, which is what a leak would not do).
    for i in 0..20 {
        assert!(
            start_use_drop(i).await,
            "warm-up cluster {i} still held after drop"
        );
    }
    let start = rss();
    for i in 0..100 {
        if i % 25 == 0 {
            println!("{i}: {} KiB", rss() / 1024);
        }
        assert!(
            start_use_drop(i).await,
            "cluster {i}: its API server is still referenced 500 ms after drop (a task survived)"
        );
    }
    let end = rss();
    println!(
        "RSS after warm-up {} KiB, after 100 clusters {} KiB ({:+.1} %)",
        start / 1024,
        end / 1024,
        (end as f64 / start as f64 - 1.0) * 100.0
    );
    assert!(
        end as f64 <= start as f64 * 1.10,
        "RSS grew from {start} to {end} bytes"
    );
}
