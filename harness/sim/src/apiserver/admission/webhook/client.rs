//! The HTTPS call to one admission webhook: POST the AdmissionReview to `clientConfig.url` with
//! `?timeout=<n>s` (client-go's rest client adds it), trusting `caBundle` only, within the
//! webhook's `timeoutSeconds`. The apiserver's verbs are synchronous, so the call runs on a
//! thread of its own with a one-thread runtime; on a multi-threaded runtime the caller's worker
//! is handed over (`block_in_place`) while it waits.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use std::sync::Arc;
use std::time::Duration;

/// Largest webhook response read (the apiserver's limit for a response body is larger; no
/// AdmissionReview comes near this).
const MAX_RESPONSE: usize = 16 * 1024 * 1024;

/// A call under way: its response body, or why it failed.
pub type Call = std::thread::JoinHandle<Result<Vec<u8>, String>>;

/// Post `body` and return the response body, or why the call failed, worded as client-go's
/// errors read after `failed to call webhook: ` (`Post "<url>": <cause>`).
pub fn post(
    url: &str,
    ca_bundle: &[u8],
    body: Vec<u8>,
    timeout: Duration,
) -> Result<Vec<u8>, String> {
    let handle = spawn_post(url, ca_bundle, body, timeout);
    wait(handle)
}

/// Start a call; `wait` for its answer (validating webhooks are called in parallel).
pub fn spawn_post(url: &str, ca_bundle: &[u8], body: Vec<u8>, timeout: Duration) -> Call {
    let url = url.to_string();
    let ca = ca_bundle.to_vec();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("starting the webhook client: {e}"))?;
        rt.block_on(async {
            match tokio::time::timeout(timeout, post_async(&url, &ca, body)).await {
                Ok(r) => r.map_err(|e| format!("Post {url:?}: {e}")),
                Err(_) => Err(format!("Post {url:?}: context deadline exceeded")),
            }
        })
    })
}

pub fn wait(handle: std::thread::JoinHandle<Result<Vec<u8>, String>>) -> Result<Vec<u8>, String> {
    let join = || {
        handle
            .join()
            .unwrap_or_else(|_| Err("the webhook call panicked".into()))
    };
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(join)
        }
        _ => join(),
    }
}

async fn post_async(url: &str, ca: &[u8], body: Vec<u8>) -> Result<Vec<u8>, String> {
    let uri: axum::http::Uri = url.parse().map_err(|e| format!("{e}"))?;
    if uri.scheme_str() != Some("https") {
        return Err("webhook URLs must use https".into());
    }
    let host = uri.host().ok_or("no host in the URL")?;
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = uri.port_u16().unwrap_or(443);
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(ca) {
        let c = c.map_err(|e| format!("caBundle: {e}"))?;
        roots.add(c).map_err(|e| format!("caBundle: {e}"))?;
    }
    if roots.is_empty() {
        // Upstream falls back to the system's roots; the sim has none to offer.
        return Err("tls: failed to verify certificate: x509: certificate signed by unknown authority (no caBundle)".into());
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let inner = rustls::client::WebPkiServerVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .map_err(|e| format!("caBundle: {e}"))?;
    let pinned = CertificateDer::pem_slice_iter(ca)
        .filter_map(Result::ok)
        .collect();
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(BundleVerifier { inner, pinned }))
        .with_no_client_auth();
    let name = ServerName::try_from(host.clone()).map_err(|e| format!("{host}: {e}"))?;
    let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|e| format!("dial tcp {host}:{port}: {e}"))?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| format!("tls: {e}"))?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
            .await
            .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let req = axum::http::Request::post(path)
        .header(axum::http::header::HOST, format!("{host}:{port}"))
        .header(axum::http::header::CONTENT_TYPE, "application/json")
        .header(axum::http::header::ACCEPT, "application/json, */*")
        .body(axum::body::Body::from(body))
        .map_err(|e| e.to_string())?;
    let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
    let status = resp.status();
    let bytes = axum::body::to_bytes(axum::body::Body::new(resp.into_body()), MAX_RESPONSE)
        .await
        .map_err(|e| e.to_string())?;
    if !status.is_success() {
        return Err(format!(
            "the server responded with the status code {} but did not return more information",
            status.as_u16()
        ));
    }
    Ok(bytes.to_vec())
}

/// Go's certificate verification, which the apiserver's webhook client uses, trusts a server
/// certificate that is itself in the CA bundle (`CertPool.contains`), CA or not: envtest's
/// caBundle is the webhook's serving certificate. WebPKI wants an issuer among the roots, so a
/// pinned certificate is checked here (name and validity), the rest by WebPKI.
#[derive(Debug)]
struct BundleVerifier {
    inner: Arc<rustls::client::WebPkiServerVerifier>,
    pinned: Vec<CertificateDer<'static>>,
}

impl rustls::client::danger::ServerCertVerifier for BundleVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        if !self
            .pinned
            .iter()
            .any(|c| c.as_ref() == end_entity.as_ref())
        {
            return self.inner.verify_server_cert(
                end_entity,
                intermediates,
                server_name,
                ocsp_response,
                now,
            );
        }
        let cert = webpki::EndEntityCert::try_from(end_entity)
            .map_err(|e| rustls::Error::General(format!("bad certificate: {e}")))?;
        cert.verify_is_valid_for_subject_name(server_name)
            .map_err(|_| {
                rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName)
            })?;
        let (_, parsed) = x509_parser::parse_x509_certificate(end_entity.as_ref())
            .map_err(|e| rustls::Error::General(format!("bad certificate: {e}")))?;
        let t = now.as_secs() as i64;
        let validity = parsed.validity();
        if t < validity.not_before.timestamp() || t > validity.not_after.timestamp() {
            return Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::Expired,
            ));
        }
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}
