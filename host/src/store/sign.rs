//! AWS Signature Version 4 for S3 requests (header-based), the one place a
//! request is signed: the canonical request, the string to sign, the
//! signing key derived from the secret, and the `Authorization` header.
//!
//! Bodies are sent as `UNSIGNED-PAYLOAD` with a `Content-MD5` that the
//! signature covers: the part is checked by the store, and nobody on the
//! path can change it without breaking the signature.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// What `x-amz-content-sha256` says of every body vmdump sends.
pub const UNSIGNED_PAYLOAD: &str = "UNSIGNED-PAYLOAD";

/// An access key and its secret (and a session token for temporary
/// credentials). `Debug` shows the key id only.
#[derive(Clone)]
pub struct Credentials {
    /// The access key id (not secret: it names the key in logs).
    pub access_key: String,
    pub(super) secret_key: String,
    pub(super) session_token: Option<String>,
}

impl Credentials {
    /// A key id, its secret and an optional session token.
    pub fn new(access_key: String, secret_key: String, session_token: Option<String>) -> Self {
        Self { access_key, secret_key, session_token }
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Credentials({}, secret hidden)", self.access_key)
    }
}

/// A request to sign: everything the signature covers.
pub struct Signable<'a> {
    /// GET, PUT, POST, HEAD, DELETE.
    pub method: &'a str,
    /// The `Host` header as sent (host, and port when not the scheme's).
    pub host: &'a str,
    /// The path, already URI-encoded ([`uri_encode`] per segment).
    pub path: &'a str,
    /// Query parameters, not encoded.
    pub query: &'a [(&'a str, String)],
    /// Other headers to sign (lowercase names).
    pub headers: &'a [(&'a str, String)],
}

/// The headers to add to the request: `x-amz-date`,
/// `x-amz-content-sha256`, the session token if any, and `Authorization`.
pub fn sign(
    req: &Signable<'_>,
    creds: &Credentials,
    region: &str,
    now: SystemTime,
) -> Vec<(&'static str, String)> {
    let amz_date = timestamp(now);
    let mut added = vec![("x-amz-date", amz_date.clone()), ("x-amz-content-sha256", UNSIGNED_PAYLOAD.into())];
    if let Some(token) = &creds.session_token {
        added.push(("x-amz-security-token", token.clone()));
    }
    let mut headers: Vec<(String, String)> = [("host", req.host.to_string())]
        .into_iter()
        .chain(req.headers.iter().cloned())
        .chain(added.iter().cloned())
        .map(|(name, value)| (name.to_ascii_lowercase(), value.trim().to_string()))
        .collect();
    headers.sort();
    let signed = headers.iter().map(|(name, _)| name.as_str()).collect::<Vec<_>>().join(";");
    let canonical = canonical_request(req, &headers, &signed, UNSIGNED_PAYLOAD);
    let scope = format!("{}/{region}/s3/aws4_request", &amz_date[..8]);
    let signature = signature(&creds.secret_key, region, &amz_date, &canonical);
    added.push((
        "authorization",
        format!(
            "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed}, Signature={signature}",
            creds.access_key
        ),
    ));
    added
}

/// The canonical request of `req` with its `headers` (lowercase, trimmed,
/// sorted) whose names are `signed`, for a body of hash `payload`.
fn canonical_request(
    req: &Signable<'_>,
    headers: &[(String, String)],
    signed: &str,
    payload: &str,
) -> String {
    format!(
        "{}\n{}\n{}\n{}\n{signed}\n{payload}",
        req.method,
        req.path,
        canonical_query(req.query),
        headers.iter().map(|(n, v)| format!("{n}:{v}\n")).collect::<String>(),
    )
}

/// The signature of `canonical` made at `amz_date` (`YYYYMMDDTHHMMSSZ`):
/// the string to sign, under the key derived from `secret` for the day,
/// the region and S3.
fn signature(secret: &str, region: &str, amz_date: &str, canonical: &str) -> String {
    let date = &amz_date[..8];
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{date}/{region}/s3/aws4_request\n{}",
        hex(&Sha256::digest(canonical))
    );
    let key = [date, region, "s3", "aws4_request"]
        .iter()
        .fold(format!("AWS4{secret}").into_bytes(), |key, part| hmac(&key, part.as_bytes()));
    hex(&hmac(&key, to_sign.as_bytes()))
}

/// The query string as signed and sent: names sorted, names and values
/// URI-encoded (`/` too).
pub fn canonical_query(query: &[(&str, String)]) -> String {
    let mut pairs: Vec<(String, String)> =
        query.iter().map(|(name, value)| (uri_encode(name, true), uri_encode(value, true))).collect();
    pairs.sort();
    pairs.iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>().join("&")
}

/// URI-encodes `text` as SigV4 wants it: every byte but letters, digits and
/// `-._~` as `%XY`; `/` kept unless `slash`.
pub fn uri_encode(text: &str, slash: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => out.push(byte as char),
            b'/' if !slash => out.push('/'),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// Lowercase hexadecimal.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `YYYYMMDDTHHMMSSZ` of `now`, in UTC.
pub fn timestamp(now: SystemTime) -> String {
    crate::triage::time::utc_basic(now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The GET Object example of AWS's SigV4 documentation ("Signature
    /// Calculations for the Authorization Header: Transferring Payload in a
    /// Single Chunk"): its published signature, with its payload hash (the
    /// empty body's) where vmdump signs UNSIGNED-PAYLOAD.
    #[test]
    fn the_documented_example_signs_to_its_published_signature() {
        let amz = timestamp(UNIX_EPOCH + Duration::from_secs(1_369_353_600));
        assert_eq!(amz, "20130524T000000Z");
        let empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        let req = Signable {
            method: "GET",
            host: "examplebucket.s3.amazonaws.com",
            path: "/test.txt",
            query: &[],
            headers: &[],
        };
        let headers: Vec<(String, String)> = [
            ("host", "examplebucket.s3.amazonaws.com"),
            ("range", "bytes=0-9"),
            ("x-amz-content-sha256", empty),
            ("x-amz-date", &amz),
        ]
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
        let canonical =
            canonical_request(&req, &headers, "host;range;x-amz-content-sha256;x-amz-date", empty);
        assert_eq!(
            signature("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "us-east-1", &amz, &canonical),
            "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        );
    }

    #[test]
    fn queries_sort_and_encode_and_paths_keep_their_slashes() {
        let query = [("uploadId", "a/b+c=".to_string()), ("partNumber", "3".to_string())];
        assert_eq!(canonical_query(&query), "partNumber=3&uploadId=a%2Fb%2Bc%3D");
        assert_eq!(uri_encode("/dumps/host 1/vmcore~", false), "/dumps/host%201/vmcore~");
    }

    #[test]
    fn the_authorization_names_the_key_and_every_signed_header_but_never_the_secret() {
        let creds = Credentials::new("GKtest".into(), "very-secret-key".into(), Some("tok".into()));
        let req = Signable {
            method: "PUT",
            host: "127.0.0.1:3900",
            path: "/dumps/a",
            query: &[],
            headers: &[("content-md5", "abc".into())],
        };
        let added = sign(&req, &creds, "garage", UNIX_EPOCH);
        let auth = &added.iter().find(|(n, _)| *n == "authorization").unwrap().1;
        assert!(auth.starts_with("AWS4-HMAC-SHA256 Credential=GKtest/19700101/garage/s3/aws4_request"));
        assert!(
            auth.contains(
                "SignedHeaders=content-md5;host;x-amz-content-sha256;x-amz-date;x-amz-security-token"
            )
        );
        assert!(!format!("{added:?}{creds:?}").contains("very-secret-key"));
    }
}
