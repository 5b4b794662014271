//! Serving certificates for the simulated API server. Real clients (client-go, kubectl) refuse
//! to send bearer tokens over plain HTTP, so the server speaks TLS with a per-cluster CA that
//! is generated at start-up and written into the kubeconfig. The same CA signs an admin client
//! certificate (`O=system:masters`, like kind's kubeconfig), which the server accepts in place
//! of the admin token; clients without a certificate still connect.
//!
//! Or, as kube-apiserver's `--tls-cert-file`/`--tls-private-key-file` (or `--cert-dir`'s
//! `apiserver.crt`/`apiserver.key`) and `--client-ca-file`, from files (`from_files`): what
//! envtest writes. Then there is no admin certificate: the client CA's owner issues its own.

use anyhow::{bail, Context, Result};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub struct ServingCerts {
    /// PEM of the CA that signed the serving certificate (goes into the kubeconfig); with
    /// certificates from files, the serving chain itself.
    pub ca_pem: String,
    pub server_config: Arc<rustls::ServerConfig>,
    /// The admin's client certificate and key (PEM), for the kubeconfig; none from files.
    pub admin: Option<ClientCert>,
}

/// Serving certificate, key and client CA files (kube-apiserver's `--tls-cert-file`,
/// `--tls-private-key-file`, `--client-ca-file`).
#[derive(Debug, Clone, PartialEq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// CA bundle that client certificates must chain to; without it, no client certificate is
    /// asked for.
    pub client_ca: Option<PathBuf>,
}

#[derive(Clone)]
pub struct ClientCert {
    pub cert_pem: String,
    pub key_pem: String,
}

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
    let admin = Some(ClientCert {
        cert_pem: admin_cert.pem(),
        key_pem: admin_key.serialize_pem(),
    });

    let chain = vec![cert.der().clone()];
    let key_der = PrivateKeyDer::try_from(key.serialize_der())
        .map_err(|e| anyhow::anyhow!("serving key: {e}"))?;
    Ok(ServingCerts {
        ca_pem,
        server_config: server_config(chain, key_der, Some(vec![ca_cert.der().clone()]))?,
        admin,
    })
}

/// The serving certificate and client CA from files, as kube-apiserver loads them: a file that
/// is missing or holds no PEM block of the expected kind is an error naming it.
pub fn from_files(files: &TlsFiles) -> Result<ServingCerts> {
    let read = |p: &Path| std::fs::read(p).with_context(|| format!("reading {}", p.display()));
    let certs = |p: &Path| -> Result<Vec<CertificateDer<'static>>> {
        let all = CertificateDer::pem_slice_iter(&read(p)?)
            .collect::<Result<Vec<_>, _>>()
            .with_context(|| format!("{}: not a PEM certificate bundle", p.display()))?;
        if all.is_empty() {
            bail!("{}: no CERTIFICATE block", p.display());
        }
        Ok(all)
    };
    let chain = certs(&files.cert)?;
    let key = PrivateKeyDer::from_pem_slice(&read(&files.key)?)
        .with_context(|| format!("{}: no PEM private key", files.key.display()))?;
    let client_roots = files.client_ca.as_deref().map(certs).transpose()?;
    let ca_pem = String::from_utf8_lossy(&read(&files.cert)?).into_owned();
    Ok(ServingCerts {
        ca_pem,
        server_config: server_config(chain, key, client_roots)
            .with_context(|| format!("serving {}", files.cert.display()))?,
        admin: None,
    })
}

/// TLS for the API: HTTP/1.1, and a client certificate verified against `client_roots` when
/// one is presented (kube-apiserver's `tls.VerifyClientCertIfGiven`).
fn server_config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    client_roots: Option<Vec<CertificateDer<'static>>>,
) -> Result<Arc<rustls::ServerConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?;
    let builder = match client_roots {
        Some(cas) => {
            let mut roots = rustls::RootCertStore::empty();
            for ca in cas {
                roots.add(ca).context("a client CA certificate as a root")?;
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .allow_unauthenticated()
            .build()
            .context("client certificate verifier")?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .context("TLS serving certificate")?;
    // HTTP/1.1 only: every client we serve speaks it, and watches stream over it.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
