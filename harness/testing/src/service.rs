//! The in-process transport: a tower service that hands each request of a `kube::Client`
//! straight to the simulated API server's router, with the cluster's bearer token, so requests
//! are authenticated and authorized exactly as they are over TLS.

use faultline_sim::SimServer;
use http::header::AUTHORIZATION;
use http::{HeaderValue, Request};
use std::convert::Infallible;
use std::task::{Context, Poll};

/// `tower::Service<Request<kube::client::Body>>` over the sim's router.
#[derive(Clone)]
pub struct InProcess {
    router: axum::Router,
    authorization: HeaderValue,
}

impl InProcess {
    pub fn new(server: &SimServer) -> InProcess {
        // The token is 40 hex digits, always a valid header value.
        let authorization = HeaderValue::from_str(&format!("Bearer {}", server.token))
            .expect("hex token is a valid header value");
        InProcess {
            router: server.router(),
            authorization,
        }
    }
}

impl tower::Service<Request<kube::client::Body>> for InProcess {
    type Response = http::Response<axum::body::Body>;
    type Error = Infallible;
    type Future = <axum::Router as tower::Service<Request<kube::client::Body>>>::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        tower::Service::<Request<kube::client::Body>>::poll_ready(&mut self.router, cx)
    }

    fn call(&mut self, mut req: Request<kube::client::Body>) -> Self::Future {
        req.headers_mut()
            .insert(AUTHORIZATION, self.authorization.clone());
        self.router.call(req)
    }
}
