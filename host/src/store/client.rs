//! One S3-compatible store at one endpoint: signed requests, each with a
//! timeout, retried with backoff within a budget of time, and errors that
//! name the endpoint and the request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use super::sign::{Credentials, Signable, canonical_query, sign, uri_encode};
use super::xml;

/// Where the store answers and how patient vmdump is with it.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// `http://host:port` or `https://host[:port]`, no path.
    pub endpoint: String,
    /// The signing region (`us-east-1` when nothing says otherwise).
    pub region: String,
    /// The key.
    pub credentials: Credentials,
    /// How long one request may take before it is given up (and retried).
    pub request_timeout: Duration,
    /// How long a request may go on being retried, from its first attempt.
    pub retry_budget: Duration,
    /// PEM certificates of the authorities a private store's certificate is
    /// checked against, instead of the built-in public ones.
    pub ca_certificates: Option<Vec<u8>>,
}

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The store answered with an error that a retry would not change.
    #[error("{request} at {endpoint}: the store answered {status} {code}: {message}")]
    Refused {
        /// The endpoint.
        endpoint: String,
        /// Method and object.
        request: String,
        /// HTTP status.
        status: u16,
        /// The S3 error code.
        code: String,
        /// Its message.
        message: String,
    },
    /// No good answer within the retry budget.
    #[error("{request} at {endpoint}: no answer after {attempts} attempts in {seconds:.0} s (last: {last})")]
    Unreachable {
        /// The endpoint.
        endpoint: String,
        /// Method and object.
        request: String,
        /// Attempts made.
        attempts: u32,
        /// Time spent.
        seconds: f64,
        /// The last failure.
        last: String,
    },
    /// No memory for a part.
    #[error("no memory for a part of {bytes} bytes: {cause}")]
    Memory {
        /// The part's size.
        bytes: usize,
        /// The error.
        cause: std::io::Error,
    },
    /// The configuration cannot make a client.
    #[error("object store {endpoint}: {why}")]
    Config {
        /// The endpoint.
        endpoint: String,
        /// What is wrong.
        why: String,
    },
}

/// A request, before it is signed.
pub struct Request<'a> {
    /// GET, PUT, POST, HEAD, DELETE.
    pub method: &'static str,
    /// The bucket.
    pub bucket: &'a str,
    /// The object's key; empty for the bucket itself.
    pub key: &'a str,
    /// Query parameters.
    pub query: Vec<(&'static str, String)>,
    /// Headers to sign and send (lowercase names).
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: &'a [u8],
}

impl Request<'_> {
    /// `METHOD bucket/key?query`, as errors name it.
    fn describe(&self) -> String {
        let query = self.query.iter().map(|(n, v)| format!("{n}={}", short(v))).collect::<Vec<_>>();
        let query = if query.is_empty() { String::new() } else { format!("?{}", query.join("&")) };
        format!("{} {}/{}{query}", self.method, self.bucket, self.key)
    }
}

/// An upload id or a token, cut for messages.
fn short(value: &str) -> String {
    if value.chars().count() > 16 {
        format!("{}...", value.chars().take(12).collect::<String>())
    } else {
        value.into()
    }
}

/// An answer.
pub struct Response {
    /// HTTP status (2xx: this module returns only those).
    pub status: u16,
    headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// The value of header `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// Counts of what a client did, for the report.
#[derive(Debug, Default)]
pub struct Traffic {
    requests: AtomicU64,
    retries: AtomicU64,
    sent: AtomicU64,
    received: AtomicU64,
}

/// [`Traffic`] at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TrafficCounts {
    /// Requests answered.
    pub requests: u64,
    /// Attempts repeated after a failure.
    pub retries: u64,
    /// Body bytes sent.
    pub bytes_sent: u64,
    /// Body bytes received.
    pub bytes_received: u64,
}

/// A client of one store.
pub struct Store {
    agent: ureq::Agent,
    config: StoreConfig,
    /// `host[:port]` as sent in `Host`.
    host: String,
    traffic: Traffic,
}

/// The largest body vmdump reads in one answer (a ranged read of the
/// reader's block, a listing page).
const MAX_BODY: u64 = 64 << 20;

/// The first wait before a retry; doubled each time up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(8);

impl Store {
    /// A client for `config`.
    ///
    /// # Errors
    /// [`StoreError::Config`]: an endpoint that is no `http(s)://host[:port]`,
    /// or a CA file without a certificate.
    pub fn new(config: StoreConfig) -> Result<Self, StoreError> {
        let bad = |why: String| StoreError::Config { endpoint: config.endpoint.clone(), why };
        let host = endpoint_host(&config.endpoint).map_err(bad)?.to_string();
        let mut tls = ureq::tls::TlsConfig::builder();
        if let Some(pem) = &config.ca_certificates {
            let certs: Vec<_> = ureq::tls::parse_pem(pem)
                .filter_map(|item| match item {
                    Ok(ureq::tls::PemItem::Certificate(cert)) => Some(cert),
                    _ => None,
                })
                .collect();
            if certs.is_empty() {
                return Err(bad("the CA file holds no PEM certificate".into()));
            }
            tls = tls.root_certs(ureq::tls::RootCerts::new_with_certs(&certs));
        }
        let stall = config.request_timeout.min(Duration::from_secs(30));
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(config.request_timeout))
            .timeout_connect(Some(stall.min(Duration::from_secs(10))))
            .timeout_per_read(Some(stall))
            .timeout_per_write(Some(stall))
            .tls_config(tls.build())
            .build()
            .new_agent();
        Ok(Self { agent, config, host, traffic: Traffic::default() })
    }

    /// The endpoint, as errors name it.
    pub fn endpoint(&self) -> &str {
        &self.config.endpoint
    }

    /// What this client did so far.
    pub fn traffic(&self) -> TrafficCounts {
        let get = |n: &AtomicU64| n.load(Ordering::Relaxed);
        let t = &self.traffic;
        TrafficCounts {
            requests: get(&t.requests),
            retries: get(&t.retries),
            bytes_sent: get(&t.sent),
            bytes_received: get(&t.received),
        }
    }

    /// Sends `req`, again after a failure that may pass (no connection, a
    /// timeout, a 5xx, 429 or S3's SlowDown) with growing waits, until it
    /// succeeds or the retry budget is spent.
    ///
    /// # Errors
    /// [`StoreError::Refused`] for an answer no retry changes,
    /// [`StoreError::Unreachable`] when the budget is spent.
    pub fn send(&self, req: &Request<'_>) -> Result<Response, StoreError> {
        self.send_within(req, self.config.retry_budget)
    }

    /// [`Store::send`] with retries for `budget` at most (the cleanup of a
    /// failed dump, which must not wait as long again).
    ///
    /// # Errors
    /// As [`Store::send`].
    pub fn send_within(&self, req: &Request<'_>, budget: Duration) -> Result<Response, StoreError> {
        let started = Instant::now();
        let mut backoff = FIRST_BACKOFF;
        let mut attempts = 0;
        loop {
            attempts += 1;
            let last = match self.attempt(req) {
                Ok(response) if (200..300).contains(&response.status) => {
                    self.traffic.requests.fetch_add(1, Ordering::Relaxed);
                    return Ok(response);
                }
                Ok(response) => {
                    let (code, message) = xml::error(&response.body);
                    if !retryable(response.status, &code) {
                        return Err(StoreError::Refused {
                            endpoint: self.config.endpoint.clone(),
                            request: req.describe(),
                            status: response.status,
                            code,
                            message,
                        });
                    }
                    format!("{} {code}", response.status)
                }
                Err(transport) => transport,
            };
            let waited = started.elapsed();
            if waited + backoff > budget {
                return Err(StoreError::Unreachable {
                    endpoint: self.config.endpoint.clone(),
                    request: req.describe(),
                    attempts,
                    seconds: waited.as_secs_f64(),
                    last,
                });
            }
            self.traffic.retries.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    /// One attempt: the answer, whatever its status, or why none came.
    fn attempt(&self, req: &Request<'_>) -> Result<Response, String> {
        let path = format!("/{}/{}", uri_encode(req.bucket, true), uri_encode(req.key, false));
        let path = if req.key.is_empty() { format!("/{}", uri_encode(req.bucket, true)) } else { path };
        let signable = Signable {
            method: req.method,
            host: &self.host,
            path: &path,
            query: &req.query,
            headers: &req.headers,
        };
        let signed = sign(&signable, &self.config.credentials, &self.config.region, SystemTime::now());
        let query = canonical_query(&req.query);
        let url = format!("{}{path}{}{query}", self.config.endpoint, if query.is_empty() { "" } else { "?" });
        let mut builder = ureq::http::Request::builder().method(req.method).uri(&url);
        for (name, value) in req.headers.iter().chain(&signed) {
            builder = builder.header(*name, value);
        }
        let request = builder.body(req.body).map_err(|e| format!("building the request: {e}"))?;
        let mut response = self.agent.run(request).map_err(|e| e.to_string())?;
        self.traffic.sent.fetch_add(req.body.len() as u64, Ordering::Relaxed);
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(n, v)| {
                (n.as_str().to_ascii_lowercase(), String::from_utf8_lossy(v.as_bytes()).into_owned())
            })
            .collect();
        let body = if req.method == "HEAD" {
            Vec::new()
        } else {
            response.body_mut().with_config().limit(MAX_BODY).read_to_vec().map_err(|e| e.to_string())?
        };
        self.traffic.received.fetch_add(body.len() as u64, Ordering::Relaxed);
        Ok(Response { status, headers, body })
    }
}

/// Whether an error answer may pass on its own.
fn retryable(status: u16, code: &str) -> bool {
    matches!(status, 408 | 429 | 500..=599)
        || matches!(code, "RequestTimeout" | "SlowDown" | "InternalError" | "ServiceUnavailable")
}

/// The `host[:port]` of an endpoint `http(s)://host[:port]`.
fn endpoint_host(endpoint: &str) -> Result<&str, String> {
    let rest = endpoint
        .strip_prefix("https://")
        .or_else(|| endpoint.strip_prefix("http://"))
        .ok_or("the endpoint is not an http:// or https:// URL")?;
    if rest.is_empty() || rest.contains('/') || rest.contains('@') {
        return Err("the endpoint must be scheme://host[:port], without a path or user".into());
    }
    Ok(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_a_scheme_and_a_host() {
        assert_eq!(endpoint_host("http://127.0.0.1:3900"), Ok("127.0.0.1:3900"));
        assert_eq!(endpoint_host("https://s3.eu-west-1.amazonaws.com"), Ok("s3.eu-west-1.amazonaws.com"));
        assert!(endpoint_host("ftp://x").is_err());
        assert!(endpoint_host("https://x/path").is_err());
        assert!(endpoint_host("https://user@x").is_err());
    }

    #[test]
    fn only_errors_that_may_pass_are_retried() {
        assert!(retryable(503, "SlowDown") && retryable(500, "") && retryable(400, "RequestTimeout"));
        assert!(
            !retryable(403, "AccessDenied")
                && !retryable(404, "NoSuchBucket")
                && !retryable(400, "EntityTooSmall")
        );
        let req = Request {
            method: "PUT",
            bucket: "b",
            key: "k",
            query: vec![("uploadId", "x".repeat(40))],
            headers: vec![],
            body: &[],
        };
        assert_eq!(req.describe(), "PUT b/k?uploadId=xxxxxxxxxxxx...");
    }
}
