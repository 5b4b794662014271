//! Serving certificates for the simulated API server. Real clients (client-go, kubectl) refuse
//! to send bearer tokens over plain HTTP, so the server speaks TLS with a per-cluster CA that
//! is generated at start-up and written into the kubeconfig. The same CA signs an admin client
//! certificate (`O=system:masters`, like kind's kubeconfig), which the server accepts in place
//! of the admin token; clients without a certificate still connect.

use anyhow::{Context, Result};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

pub struct ServingCerts {
    /// PEM of the CA that signed the serving certificate (goes into the kubeconfig).
    pub ca_pem: String,
    pub server_config: Arc<rustls::ServerConfig>,
    /// The admin's client certificate and key (PEM), for the kubeconfig.
    pub admin: ClientCert,
}

#[derive(Clone)]
pub struct ClientCert {
    pub cert_pem: String,
    pub key_pem: String,
}

/// Marks a request whose connection presented a client certificate the cluster CA signed.
#[derive(Clone, Copy, Debug)]
pub struct VerifiedClientCert;

pub fn generate() -> Result<ServingCerts> {
    let ca_key = KeyPair::generate().context("generating the CA key")?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "faultline-sim-ca");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params
        .self_signed(&ca_key)
        .context("self-signing the CA")?;
    let ca_pem = ca_cert.pem();
    let issuer = Issuer::new(ca_params, ca_key);

    let key = KeyPair::generate().context("generating the serving key")?;
    let mut params = CertificateParams::new(vec![
        "localhost".to_string(),
        "kubernetes".into(),
        "kubernetes.default".into(),
        "kubernetes.default.svc".into(),
    ])?;
    params
        .subject_alt_names
        .push(SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)));
    params
        .distinguished_name
        .push(DnType::CommonName, "kube-apiserver");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    let cert = params
        .signed_by(&key, &issuer)
        .context("signing the serving certificate")?;

    let admin_key = KeyPair::generate().context("generating the admin client key")?;
    let mut admin_params = CertificateParams::new(Vec::<String>::new())?;
    admin_params
        .distinguished_name
        .push(DnType::CommonName, "kubernetes-admin");
    admin_params
        .distinguished_name
        .push(DnType::OrganizationName, "system:masters");
    admin_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    admin_params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    let admin_cert = admin_params
        .signed_by(&admin_key, &issuer)
        .context("signing the admin client certificate")?;
    let admin = ClientCert {
        cert_pem: admin_cert.pem(),
        key_pem: admin_key.serialize_pem(),
    };

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = vec![cert.der().clone()];
    let key_der = rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der())
        .map_err(|e| anyhow::anyhow!("serving key: {e}"))?;
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(ca_cert.der().clone())
        .context("CA as a client-certificate root")?;
    let client_verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .allow_unauthenticated()
    .build()
    .context("client certificate verifier")?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_client_cert_verifier(client_verifier)
        .with_single_cert(chain, key_der)
        .context("TLS serving certificate")?;
    // HTTP/1.1 only: every client we serve speaks it, and watches stream over it.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(ServingCerts {
        ca_pem,
        server_config: Arc::new(config),
        admin,
    })
}
