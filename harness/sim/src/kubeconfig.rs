//! Kubeconfig files for clients of a simulated cluster.

use crate::tls::ClientCert;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

pub const CONTEXT: &str = "faultline-sim";

/// The admin user carries both the admin token and the admin client certificate: clients that
/// build their own transport from the kubeconfig's TLS settings alone still authenticate.
pub fn render(server: &str, token: &str, ca_pem: &str, client: Option<&ClientCert>) -> String {
    use base64::Engine;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let cert = client
        .map(|c| {
            format!(
                "    client-certificate-data: {}\n    client-key-data: {}\n",
                b64(&c.cert_pem),
                b64(&c.key_pem)
            )
        })
        .unwrap_or_default();
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: {ctx}\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\ncontexts:\n- name: {ctx}\n  context:\n    cluster: {ctx}\n    user: {ctx}\n    namespace: default\ncurrent-context: {ctx}\npreferences: {{}}\nusers:\n- name: {ctx}\n  user:\n    token: {token}\n{cert}",
        ctx = CONTEXT,
        server = server,
        token = token,
        ca = b64(ca_pem),
    )
}

/// Write the kubeconfig with owner-only permissions (it holds the token and key).
pub fn write(
    path: &Path,
    server: &str,
    token: &str,
    ca_pem: &str,
    client: Option<&ClientCert>,
) -> Result<PathBuf> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, render(server, token, ca_pem, client))
        .with_context(|| format!("writing kubeconfig {}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubeconfig_parses_as_yaml_with_token() {
        let client = ClientCert {
            cert_pem: "CERT".into(),
            key_pem: "KEY".into(),
        };
        let y: serde_yaml::Value = serde_yaml::from_str(&render(
            "https://127.0.0.1:1234",
            "abc",
            "PEM",
            Some(&client),
        ))
        .unwrap();
        assert_eq!(
            y["users"][0]["user"]["client-key-data"].as_str(),
            Some("S0VZ")
        );
        assert_eq!(y["users"][0]["user"]["token"].as_str(), Some("abc"));
        assert_eq!(
            y["clusters"][0]["cluster"]["server"].as_str(),
            Some("https://127.0.0.1:1234")
        );
        assert_eq!(y["current-context"].as_str(), Some(CONTEXT));
    }
}
