//! Real S3-compatible stores on 127.0.0.1 for the tests (issue 42):
//! Garage (a single node, or three with replication factor 3) and s3s-fs,
//! the strict one, each started by scripts/lib/garage.sh (which builds
//! them once into a cache) and stopped when the test is done. A client
//! that is not vmdump (curl, with its own SigV4) reads the objects back.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::{TempDir, temp_dir, workspace_root};

/// Which store.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// Garage, one node.
    Garage,
    /// s3s-fs: refuses parts under 5 MiB but the last, numbers not 1..N.
    S3sFs,
}

/// A running store and what a client needs to reach it.
pub struct Store {
    /// `AWS_*` variables and `BUCKET`, as its env file has them.
    pub env: Vec<(String, String)>,
    pid: String,
    /// Its folder (config, data, log).
    pub dir: TempDir,
}

impl Store {
    /// Starts a store of `kind` in a folder of its own.
    pub fn start(kind: Kind, name: &str) -> Self {
        let dir = temp_dir(&format!("store-{name}"));
        let (ensure, start, pid) = match kind {
            Kind::Garage => ("ensure_garage", "garage_single_node", "GARAGE_PID"),
            Kind::S3sFs => ("ensure_s3s_fs", "s3s_fs_node", "S3S_FS_PID"),
        };
        let script = format!(
            "set -e; source scripts/lib/tools.sh; source scripts/lib/garage.sh; tool=$({ensure}); {start} \"$tool\" \"$1\""
        );
        let out = Command::new("bash")
            .current_dir(workspace_root())
            .args(["-c", &script, "bash"])
            .arg(dir.join("node"))
            .output()
            .expect("run bash");
        assert!(out.status.success(), "{start} failed: {}", String::from_utf8_lossy(&out.stderr));
        let text = std::fs::read_to_string(dir.join("node/env")).expect("the store's env file");
        let mut env: Vec<(String, String)> = text
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let pid = env.iter().find(|(k, _)| k == pid).map(|(_, v)| v.clone()).expect("its pid");
        env.retain(|(k, _)| k.starts_with("AWS_") || k == "BUCKET");
        Self { env, pid, dir }
    }

    /// A variable of its env file.
    pub fn var(&self, name: &str) -> &str {
        &self.env.iter().find(|(k, _)| k == name).unwrap_or_else(|| panic!("no {name}")).1
    }

    /// The secret key (for the tests that look for it where it must not be).
    pub fn secret(&self) -> &str {
        self.var("AWS_SECRET_ACCESS_KEY")
    }

    /// `s3://dumps/KEY`.
    pub fn url(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.var("BUCKET"))
    }

    /// vmdump with `args`, with the store's variables and no other `AWS_*`.
    pub fn vmdump<I, S>(&self, args: I) -> Output
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_vmdump"));
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("AWS_")) {
            cmd.env_remove(k);
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v))).args(args).output().expect("run vmdump")
    }

    /// curl against the store, signed by curl itself.
    fn curl(&self, args: &[&str]) -> Output {
        let user = format!("{}:{}", self.var("AWS_ACCESS_KEY_ID"), self.secret());
        let sigv4 = format!("aws:amz:{}:s3", self.var("AWS_REGION"));
        Command::new("curl")
            .args(["-sS", "--fail-with-body", "--aws-sigv4", &sigv4, "--user", &user])
            .args(["-H", "x-amz-content-sha256:UNSIGNED-PAYLOAD"])
            .args(args)
            .output()
            .expect("run curl")
    }

    /// Downloads object `key` into `out` with curl; false if it is not there.
    pub fn download(&self, key: &str, out: &Path) -> bool {
        let url = format!("{}/{}/{key}", self.var("AWS_ENDPOINT_URL"), self.var("BUCKET"));
        self.curl(&["-o", out.to_str().unwrap(), &url]).status.success()
    }

    /// The headers of object `key` (lowercase names), from a HEAD by curl.
    pub fn head(&self, key: &str) -> Option<String> {
        let url = format!("{}/{}/{key}", self.var("AWS_ENDPOINT_URL"), self.var("BUCKET"));
        let out = self.curl(&["-I", &url]);
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).to_ascii_lowercase())
    }

    /// The keys in the bucket under `prefix`.
    pub fn keys(&self, prefix: &str) -> Vec<String> {
        // Encoded here: curl signs the query as it is written.
        let prefix = prefix.replace('/', "%2F");
        let url = format!("{}/{}?list-type=2&prefix={prefix}", self.var("AWS_ENDPOINT_URL"), self.var("BUCKET"));
        let out = self.curl(&[&url]);
        assert!(out.status.success(), "listing: {}", String::from_utf8_lossy(&out.stdout));
        let text = String::from_utf8_lossy(&out.stdout);
        text.split("<Key>").skip(1).filter_map(|s| s.split_once("</Key>")).map(|(k, _)| k.to_string()).collect()
    }

    /// Multipart uploads still open in the bucket.
    pub fn open_uploads(&self) -> Vec<String> {
        let url = format!("{}/{}?uploads=", self.var("AWS_ENDPOINT_URL"), self.var("BUCKET"));
        let out = self.curl(&[&url]);
        assert!(out.status.success(), "listing uploads: {}", String::from_utf8_lossy(&out.stdout));
        let text = String::from_utf8_lossy(&out.stdout);
        text.split("<UploadId>").skip(1).filter_map(|s| s.split_once("</UploadId>")).map(|(k, _)| k.to_string()).collect()
    }

    /// Every file under the store's folder, and its log.
    pub fn files(&self) -> Vec<PathBuf> {
        fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() { walk(&path, out) } else { out.push(path) }
            }
        }
        let mut out = Vec::new();
        walk(&self.dir, &mut out);
        out
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg(&self.pid).status();
    }
}
