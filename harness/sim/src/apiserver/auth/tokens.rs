//! ServiceAccount tokens: JWTs the sim signs (ES256 with a per-cluster key) carrying the claims
//! a 1.35 apiserver writes, their verification for authentication, and the TokenRequest
//! subresource (`POST .../serviceaccounts/<name>/token`) that issues them.

use super::UserInfo;
use crate::apiserver::resources::ResourceKey;
use crate::apiserver::status::{ApiError, ApiResult};
use crate::apiserver::ApiServer;
use crate::timing;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{
    EcdsaKeyPair, KeyPair, UnparsedPublicKey, ECDSA_P256_SHA256_FIXED,
    ECDSA_P256_SHA256_FIXED_SIGNING,
};
use serde_json::{json, Value};
use sha2::Digest;

/// `--service-account-issuer` of kubeadm and kind clusters (the sim's default); the issuer is
/// also the default API audience (`--api-audiences` unset).
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// TokenRequest's default `expirationSeconds`.
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// The shortest token lifetime TokenRequest accepts.
const MIN_EXPIRATION_SECONDS: i64 = 600;

/// The per-cluster signing key (the apiserver's `--service-account-signing-key-file`).
pub struct Signer {
    /// `--service-account-issuer`: the `iss` claim written and required.
    issuer: String,
    key: EcdsaKeyPair,
    kid: String,
    rng: SystemRandom,
}

/// DER prefix of a P-256 SubjectPublicKeyInfo, before the 65-byte uncompressed point.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

impl Signer {
    pub fn generate() -> Signer {
        Self::with_issuer(ISSUER)
    }

    /// A fresh key for tokens of this issuer.
    pub fn with_issuer(issuer: &str) -> Signer {
        let rng = SystemRandom::new();
        // Key generation from the system RNG only fails without an entropy source at all.
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .expect("system RNG for the token signing key");
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .expect("a freshly generated P-256 key parses");
        // The apiserver's key ID: base64url(sha256(DER of the public key)).
        let mut der = P256_SPKI_PREFIX.to_vec();
        der.extend_from_slice(key.public_key().as_ref());
        let kid = B64.encode(sha2::Sha256::digest(&der));
        Signer {
            issuer: issuer.to_string(),
            key,
            kid,
            rng,
        }
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    fn sign(&self, claims: &Value) -> String {
        let header = json!({"alg": "ES256", "kid": self.kid});
        let input = format!(
            "{}.{}",
            B64.encode(header.to_string()),
            B64.encode(claims.to_string())
        );
        let sig = self
            .key
            .sign(&self.rng, input.as_bytes())
            .map(|s| B64.encode(s.as_ref()))
            .unwrap_or_default();
        format!("{}.{}", input, sig)
    }

    /// The claims of a token this signer issued, if its signature holds (expiry not checked).
    fn verified_claims(&self, token: &str) -> Option<Value> {
        let (input, sig) = token.rsplit_once('.')?;
        let (header, payload) = input.split_once('.')?;
        let header: Value = serde_json::from_slice(&B64.decode(header).ok()?).ok()?;
        if header.get("alg").and_then(Value::as_str) != Some("ES256") {
            return None;
        }
        let sig = B64.decode(sig).ok()?;
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, self.key.public_key().as_ref())
            .verify(input.as_bytes(), &sig)
            .ok()?;
        serde_json::from_slice(&B64.decode(payload).ok()?).ok()
    }

    /// A token for ServiceAccount `ns/name` (uid `uid`), valid `seconds` from `now` (unix seconds).
    #[allow(clippy::too_many_arguments)] // the claims a token carries, each its own
    pub fn issue(
        &self,
        ns: &str,
        name: &str,
        uid: &str,
        audiences: &[String],
        now: i64,
        seconds: i64,
        bound: Option<&Value>,
    ) -> String {
        let mut k8s = json!({"namespace": ns, "serviceaccount": {"name": name, "uid": uid}});
        if let Some(b) = bound {
            let kind = b
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_ascii_lowercase();
            if matches!(kind.as_str(), "pod" | "secret" | "node") {
                k8s[kind] = json!({"name": b.get("name").cloned().unwrap_or(Value::Null), "uid": b.get("uid").cloned().unwrap_or(Value::Null)});
            }
        }
        // go-jose writes the claims as a map: keys in sorted order.
        let claims = json!({
            "aud": audiences, "exp": now + seconds, "iat": now, "iss": self.issuer, "jti": uuid::Uuid::new_v4().to_string(),
            "kubernetes.io": k8s, "nbf": now, "sub": super::service_account_username(ns, name),
        });
        self.sign(&claims)
    }
}

/// A string list as Go's `%q` prints it: `["a" "b"]`.
fn go_quoted(list: &[&str]) -> String {
    format!(
        "[{}]",
        list.iter()
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(" ")
    )
}

/// Authenticate a ServiceAccount token: signature, issuer, audience (one of `targets` must be
/// among the token's), lifetime, and the ServiceAccount (same uid) still existing, so tokens of
/// a deleted account stop working. Returns the user and the target audiences the token has.
pub fn authenticate(
    signer: &Signer,
    api: &ApiServer,
    token: &str,
    now: i64,
    targets: &[&str],
) -> Result<(UserInfo, Vec<String>), String> {
    let claims = signer
        .verified_claims(token)
        .ok_or("invalid bearer token")?;
    if claims.get("iss").and_then(Value::as_str) != Some(signer.issuer()) {
        return Err("invalid bearer token".into());
    }
    let auds: Vec<&str> = claims
        .get("aud")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let matched: Vec<String> = targets
        .iter()
        .filter(|t| auds.contains(t))
        .map(|t| t.to_string())
        .collect();
    if matched.is_empty() {
        return Err(format!(
            "token audiences {} is invalid for the target audiences {}",
            go_quoted(&auds),
            go_quoted(targets)
        ));
    }
    let exp = claims.get("exp").and_then(Value::as_i64).unwrap_or(0);
    let nbf = claims.get("nbf").and_then(Value::as_i64).unwrap_or(0);
    if now > exp || now < nbf {
        return Err("token has expired".into());
    }
    let k8s = claims.get("kubernetes.io").cloned().unwrap_or(Value::Null);
    let ns = k8s.get("namespace").and_then(Value::as_str).unwrap_or("");
    let name = k8s
        .pointer("/serviceaccount/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let uid = k8s
        .pointer("/serviceaccount/uid")
        .and_then(Value::as_str)
        .unwrap_or("");
    let sa = api
        .store
        .get(&ResourceKey::new("", "serviceaccounts"), ns, name)
        .ok_or_else(|| format!("service account {}/{} has been deleted", ns, name))?;
    if crate::apiserver::meta::uid(&sa) != uid {
        return Err(format!(
            "service account UID ({}) does not match claim ({})",
            crate::apiserver::meta::uid(&sa),
            uid
        ));
    }
    let mut user = UserInfo::service_account(ns, name, uid);
    if let Some(jti) = claims.get("jti").and_then(Value::as_str) {
        user.extra.insert(
            "authentication.kubernetes.io/credential-id".into(),
            vec![format!("JTI={}", jti)],
        );
    }
    Ok((user, matched))
}

/// `POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token`: a TokenRequest answered with
/// its status (token, expirationTimestamp) and defaulted spec.
pub fn token_request(
    signer: &Signer,
    api: &ApiServer,
    ns: &str,
    name: &str,
    body: &Value,
) -> ApiResult<Value> {
    let sa = api
        .store
        .get(&ResourceKey::new("", "serviceaccounts"), ns, name)
        .ok_or_else(|| ApiError::not_found("", "serviceaccounts", name))?;
    let spec = body.get("spec").cloned().unwrap_or_else(|| json!({}));
    let seconds = match spec.get("expirationSeconds").and_then(Value::as_i64) {
        None | Some(0) => DEFAULT_EXPIRATION_SECONDS,
        Some(s) => s,
    };
    if seconds < MIN_EXPIRATION_SECONDS {
        // ValidateTokenRequest's errors name no object (`NewInvalid(kind, "", errs)`).
        return Err(ApiError::invalid(
            "authentication.k8s.io",
            "TokenRequest",
            "",
            vec![(
                "spec.expirationSeconds".into(),
                format!(
                    "Invalid value: {}: may not specify a duration less than 10 minutes",
                    seconds
                ),
                "FieldValueInvalid",
            )],
        ));
    }
    let audiences: Vec<String> = match spec.get("audiences").and_then(Value::as_array) {
        Some(a) if !a.is_empty() => a
            .iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect(),
        _ => vec![signer.issuer().to_string()],
    };
    let bound = spec.get("boundObjectRef").filter(|b| b.is_object());
    let now = chrono::Utc::now();
    let token = signer.issue(
        ns,
        name,
        crate::apiserver::meta::uid(&sa),
        &audiences,
        now.timestamp(),
        seconds,
        bound,
    );
    let expires = now + chrono::Duration::seconds(seconds);
    Ok(json!({
        "kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": ns, "uid": crate::apiserver::meta::uid(&sa), "creationTimestamp": timing::rfc3339(now)},
        "spec": {"audiences": audiences, "expirationSeconds": seconds, "boundObjectRef": bound.cloned().unwrap_or(Value::Null)},
        "status": {"token": token, "expirationTimestamp": timing::rfc3339(expires)},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims_of(token: &str) -> Value {
        let payload = token.split('.').nth(1).unwrap();
        serde_json::from_slice(&B64.decode(payload).unwrap()).unwrap()
    }

    #[test]
    fn tokens_carry_the_apiserver_claims_and_verify_only_with_their_key() {
        let s = Signer::generate();
        let t = s.issue(
            "ns",
            "ctl",
            "uid-1",
            &[ISSUER.to_string()],
            1_000,
            3600,
            None,
        );
        let c = claims_of(&t);
        assert_eq!(c["sub"], "system:serviceaccount:ns:ctl");
        assert_eq!(
            c["kubernetes.io"],
            json!({"namespace": "ns", "serviceaccount": {"name": "ctl", "uid": "uid-1"}})
        );
        assert_eq!(
            (c["exp"].as_i64(), c["iat"].as_i64(), c["nbf"].as_i64()),
            (Some(4_600), Some(1_000), Some(1_000))
        );
        let keys: Vec<&String> = c.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "aud",
                "exp",
                "iat",
                "iss",
                "jti",
                "kubernetes.io",
                "nbf",
                "sub"
            ]
        );
        assert!(s.verified_claims(&t).is_some());
        assert!(
            Signer::generate().verified_claims(&t).is_none(),
            "another cluster's key must not verify it"
        );
        let mut forged = claims_of(&t);
        forged["sub"] = json!("system:serviceaccount:kube-system:admin");
        let parts: Vec<&str> = t.split('.').collect();
        let tampered = format!(
            "{}.{}.{}",
            parts[0],
            B64.encode(forged.to_string()),
            parts[2]
        );
        assert!(
            s.verified_claims(&tampered).is_none(),
            "changed claims must break the signature"
        );
    }
}
