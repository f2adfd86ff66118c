//! A store's settings from the profile's `[output]` and the environment
//! other S3 tools read (`AWS_ENDPOINT_URL`, `AWS_REGION`,
//! `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`):
//! the profile wins, the environment fills in.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::client::StoreConfig;
use super::sign::Credentials;
use super::upload::MIN_PART;
use crate::profile::OutputSection;

/// Looks up an environment variable (the process's, or a test's).
pub type Environment<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Why a store cannot be used as configured.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TargetError {
    /// No key anywhere.
    #[error(
        "no key for the object store: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or [output] credentials"
    )]
    NoCredentials,
    /// The key file cannot be used.
    #[error("credentials file {path}: {why}")]
    CredentialsFile {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// Plain HTTP to another machine without the profile's consent.
    #[error(
        "{endpoint} is plain HTTP to another machine: keys and dumps would cross the network in the clear; \
         use https, or set [output] allow_http = true"
    )]
    InsecureHttp {
        /// The endpoint.
        endpoint: String,
    },
    /// The CA file cannot be read.
    #[error("CA file {path}: {cause}")]
    CaFile {
        /// The file.
        path: PathBuf,
        /// The error.
        cause: std::io::Error,
    },
    /// A setting out of range.
    #[error("[output] {0}")]
    Range(String),
}

/// Everything needed to reach the store and lay out an upload.
#[derive(Debug, Clone)]
pub struct StoreSettings {
    /// The client's settings.
    pub config: StoreConfig,
    /// Bytes of a part, before a size hint raises it.
    pub part_size: u64,
    /// Where the dump goes when the store stays away.
    pub fallback: Option<PathBuf>,
}

impl StoreSettings {
    /// The settings of `output`, filled in from `env`.
    ///
    /// # Errors
    /// [`TargetError`]: no key, a key file others may read, plain HTTP to
    /// another machine without `allow_http`, a bad CA file or part size.
    pub fn resolve(output: &OutputSection, env: Environment<'_>) -> Result<Self, TargetError> {
        let region = output
            .region
            .clone()
            .or_else(|| env("AWS_REGION"))
            .or_else(|| env("AWS_DEFAULT_REGION"))
            .unwrap_or_else(|| "us-east-1".into());
        let endpoint = output
            .endpoint
            .clone()
            .or_else(|| env("AWS_ENDPOINT_URL_S3"))
            .or_else(|| env("AWS_ENDPOINT_URL"))
            .unwrap_or_else(|| format!("https://s3.{region}.amazonaws.com"));
        let endpoint = endpoint.trim_end_matches('/').to_string();
        if endpoint.starts_with("http://") && !output.allow_http && !is_loopback(&endpoint) {
            return Err(TargetError::InsecureHttp { endpoint });
        }
        let credentials = match &output.credentials {
            Some(path) => credentials_file(path)?,
            None => credentials_env(env)?,
        };
        let ca_certificates = match &output.ca_file {
            Some(path) => {
                Some(std::fs::read(path).map_err(|cause| TargetError::CaFile { path: path.clone(), cause })?)
            }
            None => None,
        };
        let part_mib = output.part_mib.unwrap_or(5);
        if !(MIN_PART >> 20..=5120).contains(&part_mib) {
            return Err(TargetError::Range(format!("part_mib = {part_mib} is out of range 5..=5120")));
        }
        let seconds = |value: Option<u64>, default: u64, name: &str| match value.unwrap_or(default) {
            0 => Err(TargetError::Range(format!("{name} = 0: it must be at least 1"))),
            s => Ok(Duration::from_secs(s)),
        };
        let config = StoreConfig {
            endpoint,
            region,
            credentials,
            request_timeout: seconds(output.request_timeout_seconds, 60, "request_timeout_seconds")?,
            retry_budget: seconds(output.retry_seconds, 120, "retry_seconds")?,
            ca_certificates,
        };
        Ok(Self { config, part_size: part_mib << 20, fallback: output.fallback.clone() })
    }
}

/// Whether `endpoint` is on this machine (plain HTTP never leaves it).
fn is_loopback(endpoint: &str) -> bool {
    let host = endpoint.trim_start_matches("http://");
    let host =
        host.rsplit_once(':').map_or(host, |(h, port)| if port.parse::<u16>().is_ok() { h } else { host });
    host == "localhost"
        || host == "[::1]"
        || host.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
}

fn credentials_env(env: Environment<'_>) -> Result<Credentials, TargetError> {
    match (env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY")) {
        (Some(id), Some(secret)) if !id.is_empty() && !secret.is_empty() => {
            Ok(Credentials::new(id, secret, env("AWS_SESSION_TOKEN").filter(|t| !t.is_empty())))
        }
        _ => Err(TargetError::NoCredentials),
    }
}

/// The key in `path`, a file in the format of AWS's `credentials` (its
/// `[default]` section, or lines before any section), readable by its
/// owner only.
fn credentials_file(path: &Path) -> Result<Credentials, TargetError> {
    let bad = |why: String| TargetError::CredentialsFile { path: path.to_owned(), why };
    let meta = std::fs::metadata(path).map_err(|e| bad(e.to_string()))?;
    if meta.mode() & 0o077 != 0 {
        return Err(bad(format!(
            "mode {:04o} lets others read the key; make it 0600 (chmod 600 {})",
            meta.mode() & 0o7777,
            path.display()
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let mut section = String::from("default");
    let mut found = std::collections::BTreeMap::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with(['#', ';'])) {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.trim().to_string();
        } else if let Some((key, value)) = line.split_once('=')
            && section == "default"
        {
            found.insert(key.trim().to_ascii_lowercase(), value.trim().to_string());
        }
    }
    match (found.remove("aws_access_key_id"), found.remove("aws_secret_access_key")) {
        (Some(id), Some(secret)) => Ok(Credentials::new(id, secret, found.remove("aws_session_token"))),
        _ => Err(bad("no aws_access_key_id and aws_secret_access_key in its [default] section".into())),
    }
}

/// `template` with `{host}`, `{release}` and `{time}` replaced; characters
/// that are awkward in keys (`/` in a host name, spaces) become `_`.
pub fn template_key(template: &str, host: &str, release: &str, time: &str) -> String {
    let clean = |text: &str| -> String {
        text.chars().map(|c| if c.is_ascii_graphic() && c != '/' { c } else { '_' }).collect()
    };
    template
        .replace("{host}", &clean(host))
        .replace("{release}", &clean(release))
        .replace("{time}", &clean(time))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string())
    }

    #[test]
    fn the_environment_alone_is_enough_and_the_profile_wins() {
        let env = env_of(&[
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:3900/"),
            ("AWS_REGION", "garage"),
            ("AWS_ACCESS_KEY_ID", "GKid"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
        ]);
        let settings = StoreSettings::resolve(&OutputSection::default(), &env).unwrap();
        assert_eq!(
            (settings.config.endpoint.as_str(), settings.config.region.as_str()),
            ("http://127.0.0.1:3900", "garage")
        );
        assert_eq!(settings.part_size, 5 << 20);
        let output =
            OutputSection { endpoint: Some("http://10.0.2.2:3900".into()), ..OutputSection::default() };
        assert!(matches!(StoreSettings::resolve(&output, &env), Err(TargetError::InsecureHttp { .. })));
        let output = OutputSection { allow_http: true, ..output };
        assert_eq!(StoreSettings::resolve(&output, &env).unwrap().config.endpoint, "http://10.0.2.2:3900");
        let none = env_of(&[]);
        assert!(matches!(
            StoreSettings::resolve(&OutputSection::default(), &none),
            Err(TargetError::NoCredentials)
        ));
        let aws = StoreSettings::resolve(
            &OutputSection::default(),
            &env_of(&[("AWS_ACCESS_KEY_ID", "a"), ("AWS_SECRET_ACCESS_KEY", "b")]),
        );
        assert_eq!(aws.unwrap().config.endpoint, "https://s3.us-east-1.amazonaws.com");
    }

    #[test]
    fn a_key_file_must_be_private() {
        let path = std::env::temp_dir().join(format!("vmdump-s3-creds-{}", std::process::id()));
        std::fs::write(&path, "[other]\naws_access_key_id = X\n[default]\naws_access_key_id = GKid\naws_secret_access_key = s3cr3t\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = credentials_file(&path).unwrap_err().to_string();
        assert!(err.contains("mode 0644"), "{err}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let creds = credentials_file(&path).unwrap();
        assert_eq!((creds.access_key.as_str(), creds.secret_key.as_str()), ("GKid", "s3cr3t"));
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn keys_from_templates_and_loopback_hosts() {
        assert_eq!(
            template_key("{host}/{time}-{release}/vmcore", "web 1", "6.1.0-9", "20261207T190000Z"),
            "web_1/20261207T190000Z-6.1.0-9/vmcore"
        );
        assert!(
            is_loopback("http://127.0.0.1:3900")
                && is_loopback("http://localhost")
                && is_loopback("http://[::1]:9000")
        );
        assert!(!is_loopback("http://10.0.2.2:3900") && !is_loopback("http://127.example.com"));
    }
}
