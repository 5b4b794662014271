//! Bearer-token authentication: the cluster's admin token, then ServiceAccount tokens; and the
//! client certificate's user (`x509`) when there is no token.

use super::{tokens, Auth, UserInfo};
use crate::apiserver::ApiServer;
use axum::http::{header, HeaderMap};

/// The user a request's `Authorization: Bearer` token identifies, else the user of the client
/// certificate its connection presented (verified against the client CA, `x509::user_of`);
/// `None` is a 401. A token wins over the certificate (kube-apiserver tries the certificate
/// first), so a kubeconfig derived from the admin's with a ServiceAccount token acts as that
/// ServiceAccount (docs/fidelity.md).
pub fn authenticate(
    auth: &Auth,
    api: &ApiServer,
    headers: &HeaderMap,
    client_cert: Option<&UserInfo>,
) -> Option<UserInfo> {
    let Some(v) = headers.get(header::AUTHORIZATION) else {
        return client_cert.cloned();
    };
    let v = v.to_str().ok()?;
    let token = v.strip_prefix("Bearer ").map(str::trim)?;
    authenticate_token(auth, api, token, &[auth.signer.issuer()])
        .ok()
        .map(|(user, _)| user)
}

/// Authenticate one token for some audiences (also what TokenReview asks): the user and the
/// audiences it was accepted for. The admin token is not audience-bound: it holds for all.
pub fn authenticate_token(
    auth: &Auth,
    api: &ApiServer,
    token: &str,
    audiences: &[&str],
) -> Result<(UserInfo, Vec<String>), String> {
    if constant_time_eq(token, &auth.admin_token) {
        return Ok((
            UserInfo::admin(),
            audiences.iter().map(|a| a.to_string()).collect(),
        ));
    }
    if token.split('.').count() == 3 {
        return tokens::authenticate(
            &auth.signer,
            api,
            token,
            chrono::Utc::now().timestamp(),
            audiences,
        );
    }
    Err("invalid bearer token".into())
}

fn constant_time_eq(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}
