//! What the control plane authenticates with: a CA, kube-apiserver's serving certificate, the
//! service-account signing key and a static token per identity, all generated per start.

use crate::error::Result;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use std::net::{IpAddr, Ipv4Addr};

/// The first address of `--service-cluster-ip-range=10.96.0.0/12`: the `kubernetes` Service,
/// which in-cluster clients reach the apiserver by.
pub(crate) const KUBERNETES_SERVICE_IP: Ipv4Addr = Ipv4Addr::new(10, 96, 0, 1);

pub(crate) struct Pki {
    pub ca_pem: String,
    pub ca_key_pem: String,
    pub serving_pem: String,
    pub serving_key_pem: String,
    /// The service-account signing key (PKCS#8 PEM) and its public half (PKIX PEM).
    pub sa_key_pem: String,
    pub sa_pub_pem: String,
    /// A client certificate of the admin (`kubernetes-admin` in `system:masters`, as kubeadm
    /// and kind issue one), for clients that authenticate by certificate only.
    pub admin_cert_pem: String,
    pub admin_key_pem: String,
}

pub(crate) fn generate() -> Result<Pki> {
    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.distinguished_name
        .push(DnType::CommonName, "faultline-upstream-ca");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca.self_signed(&ca_key)?;
    let ca_pem = ca_cert.pem();
    let ca_key_pem = ca_key.serialize_pem();
    let issuer = Issuer::new(ca, ca_key);

    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(vec![
        "localhost".to_string(),
        "kubernetes".into(),
        "kubernetes.default".into(),
        "kubernetes.default.svc".into(),
        "kubernetes.default.svc.cluster.local".into(),
    ])?;
    params
        .subject_alt_names
        .push(SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)));
    params
        .subject_alt_names
        .push(SanType::IpAddress(IpAddr::V4(KUBERNETES_SERVICE_IP)));
    params
        .distinguished_name
        .push(DnType::CommonName, "kube-apiserver");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    let cert = params.signed_by(&key, &issuer)?;

    let admin_key = KeyPair::generate()?;
    let mut admin = CertificateParams::new(Vec::<String>::new())?;
    admin
        .distinguished_name
        .push(DnType::CommonName, "kubernetes-admin");
    admin
        .distinguished_name
        .push(DnType::OrganizationName, "system:masters");
    admin.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    admin.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    let admin_cert = admin.signed_by(&admin_key, &issuer)?;

    let sa = KeyPair::generate()?;
    Ok(Pki {
        admin_cert_pem: admin_cert.pem(),
        admin_key_pem: admin_key.serialize_pem(),
        ca_pem,
        ca_key_pem,
        serving_pem: cert.pem(),
        serving_key_pem: key.serialize_pem(),
        sa_key_pem: sa.serialize_pem(),
        sa_pub_pem: sa.public_key_pem(),
    })
}

/// A fresh bearer token: 128 random bits, hex.
pub(crate) fn token() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// A kubeconfig for `server` that trusts `ca_pem` and presents `token`.
pub(crate) fn kubeconfig(server: &str, ca_pem: &str, user: &str, token: &str) -> String {
    kubeconfig_with(server, ca_pem, user, &format!("token: {token}"))
}

/// A kubeconfig for `server` that trusts `ca_pem` and presents a client certificate.
pub(crate) fn kubeconfig_with_certificate(
    server: &str,
    ca_pem: &str,
    user: &str,
    cert_pem: &str,
    key_pem: &str,
) -> String {
    use base64::Engine as _;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    kubeconfig_with(
        server,
        ca_pem,
        user,
        &format!(
            "client-certificate-data: {}\n    client-key-data: {}",
            b64(cert_pem),
            b64(key_pem)
        ),
    )
}

/// A kubeconfig whose user entry is `credentials` (YAML lines at the user's indentation).
fn kubeconfig_with(server: &str, ca_pem: &str, user: &str, credentials: &str) -> String {
    use base64::Engine as _;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: faultline-upstream
  cluster:
    server: {server}
    certificate-authority-data: {ca}
users:
- name: {user}
  user:
    {credentials}
contexts:
- name: faultline-upstream
  context:
    cluster: faultline-upstream
    user: {user}
current-context: faultline-upstream
"
    )
}
