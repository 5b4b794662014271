//! A real control plane to poke at by hand: `cargo run -p faultline-upstream --example up
//! [-- --controllers]`. Prints the kubeconfig's path, then holds until Ctrl-C and stops every
//! process. Where the sim and the real apiserver are to be compared on one request, this is the
//! real side (docs/upstream.md).

use faultline_upstream::{ControlPlane, Options};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let controllers = std::env::args().any(|a| a == "--controllers");
    let opts = if controllers {
        Options::with_controllers()
    } else {
        Options::default()
    };
    let cp = ControlPlane::start(opts).await?;
    println!(
        "kube-apiserver {} ready after {:?}\nexport KUBECONFIG={}\n(by client certificate: {})",
        faultline_upstream::KUBERNETES_VERSION,
        cp.ready_after(),
        cp.kubeconfig().display(),
        cp.certificate_kubeconfig().display()
    );
    tokio::signal::ctrl_c().await?;
    cp.stop().await?;
    Ok(())
}
