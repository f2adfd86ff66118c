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
    /// Garage, three nodes, replication factor 3; the client talks to node 1.
    GarageCluster,
}

impl Kind {
    /// The single-node stores every upload test runs on: Garage, and the
    /// strict one, which refuses what AWS refuses.
    pub const SINGLE: [Kind; 2] = [Kind::Garage, Kind::S3sFs];
}

/// A running store and what a client needs to reach it.
pub struct Store {
    /// Which store.
    pub kind: Kind,
    /// `AWS_*` variables and `BUCKET`, as its env file has them.
    pub env: Vec<(String, String)>,
    /// Its processes (a cluster's nodes, node 1 first).
    pub pids: Vec<String>,
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
            Kind::GarageCluster => ("ensure_garage", "garage_cluster", "GARAGE_PIDS"),
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
        let pids = env.iter().find(|(k, _)| k == pid).map(|(_, v)| v.clone()).expect("its pids");
        let pids = pids.split_whitespace().map(String::from).collect();
        env.retain(|(k, _)| k.starts_with("AWS_") || k == "BUCKET");
        Self { kind, env, pids, dir }
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
        self.command(self.var("AWS_ENDPOINT_URL")).args(args).output().expect("run vmdump")
    }

    /// vmdump with the store's key, reaching it at `endpoint` (a proxy).
    pub fn command(&self, endpoint: &str) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_vmdump"));
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("AWS_")) {
            cmd.env_remove(k);
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v))).env("AWS_ENDPOINT_URL", endpoint);
        cmd
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
        let url =
            format!("{}/{}?list-type=2&prefix={prefix}", self.var("AWS_ENDPOINT_URL"), self.var("BUCKET"));
        let out = self.curl(&[&url]);
        assert!(out.status.success(), "listing: {}", String::from_utf8_lossy(&out.stdout));
        let text = String::from_utf8_lossy(&out.stdout);
        text.split("<Key>")
            .skip(1)
            .filter_map(|s| s.split_once("</Key>"))
            .map(|(k, _)| k.to_string())
            .collect()
    }

    /// Multipart uploads still open in the bucket; `None` from s3s-fs,
    /// which cannot list them.
    pub fn open_uploads(&self) -> Option<Vec<String>> {
        if matches!(self.kind, Kind::S3sFs) {
            return None;
        }
        let url = format!("{}/{}?uploads=", self.var("AWS_ENDPOINT_URL"), self.var("BUCKET"));
        let out = self.curl(&[&url]);
        assert!(out.status.success(), "listing uploads: {}", String::from_utf8_lossy(&out.stdout));
        let text = String::from_utf8_lossy(&out.stdout);
        let ids = text.split("<UploadId>").skip(1).filter_map(|s| s.split_once("</UploadId>"));
        Some(ids.map(|(k, _)| k.to_string()).collect())
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
        let _ = Command::new("kill").arg("-CONT").args(&self.pids).status();
        let _ = Command::new("kill").args(&self.pids).status();
    }
}

/// A TCP proxy in front of a store that misbehaves on purpose, the same
/// way for the same seed: each connection passes, waits, is reset before
/// it forwards anything, or is cut after some bytes, and none carries more
/// than a few MiB (clients keep connections open: this makes new ones); and
/// after `outage_after` bytes it lets nothing through for `outage`
/// (connections closed and refused: the store is away), then passes again.
pub struct FaultProxy {
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Connections by what was done to them: passed, delayed, reset, cut.
    pub tally: std::sync::Arc<std::sync::Mutex<[u64; 4]>>,
}

/// What the proxy does.
#[derive(Debug, Clone, Copy)]
pub struct Faults {
    /// The seed of its choices.
    pub seed: u64,
    /// Per cent of connections delayed by `delay`.
    pub delayed: u64,
    /// Per cent reset.
    pub reset: u64,
    /// Per cent cut after some bytes.
    pub cut: u64,
    /// How long a delayed connection waits.
    pub delay: std::time::Duration,
    /// Bytes passed before the outage; none without one.
    pub outage_after: Option<u64>,
    /// How long the store is away.
    pub outage: std::time::Duration,
}

/// The bytes passed, and when the outage began.
struct Traffic {
    passed: std::sync::atomic::AtomicU64,
    away_since: std::sync::Mutex<Option<std::time::Instant>>,
    faults: Faults,
}

impl Traffic {
    /// Whether the store is away now (the outage begins once its bytes passed).
    fn away(&self) -> bool {
        let Some(after) = self.faults.outage_after else { return false };
        if self.passed.load(std::sync::atomic::Ordering::Relaxed) < after {
            return false;
        }
        let mut since = self.away_since.lock().unwrap();
        since.get_or_insert_with(std::time::Instant::now).elapsed() < self.faults.outage
    }
}

impl FaultProxy {
    /// A proxy to `target` (`http://127.0.0.1:PORT`) with `faults`.
    pub fn start(target: &str, faults: Faults) -> Self {
        use std::net::{TcpListener, TcpStream};
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::{Arc, Mutex};
        let to = target.trim_start_matches("http://").to_string();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let tally = Arc::new(Mutex::new([0u64; 4]));
        let traffic = Arc::new(Traffic { passed: Default::default(), away_since: Mutex::new(None), faults });
        let (stop2, tally2) = (stop.clone(), tally.clone());
        std::thread::spawn(move || {
            // splitmix64: well mixed from the first draw of any seed.
            let mut state = faults.seed;
            let mut next = move || {
                state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                z ^ (z >> 31)
            };
            while !stop2.load(Ordering::Relaxed) {
                let Ok((client, _)) = listener.accept() else {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    continue;
                };
                if traffic.away() {
                    drop(client); // away: closed at once
                    continue;
                }
                let roll = next() % 100;
                let kind = match roll {
                    r if r < faults.reset => 2,
                    r if r < faults.reset + faults.cut => 3,
                    r if r < faults.reset + faults.cut + faults.delayed => 1,
                    _ => 0,
                };
                tally2.lock().unwrap()[kind] += 1;
                let limit = if kind == 3 { 1 + next() % (256 << 10) } else { (1 << 20) + next() % (8 << 20) };
                let (to, traffic, delay) = (to.clone(), traffic.clone(), faults.delay);
                std::thread::spawn(move || {
                    client.set_nonblocking(false).unwrap();
                    if kind == 2 {
                        // Closed with the request unread: the kernel resets it.
                        std::thread::sleep(std::time::Duration::from_millis(50));
                        return;
                    }
                    if kind == 1 {
                        std::thread::sleep(delay);
                    }
                    let Ok(server) = TcpStream::connect(&to) else { return };
                    pipe_both(client, server, limit, &traffic);
                });
            }
        });
        Self { endpoint, stop, tally }
    }
}

/// Copies both ways until either side ends, `limit` bytes went up, or the
/// store is away.
fn pipe_both(client: std::net::TcpStream, server: std::net::TcpStream, limit: u64, traffic: &Traffic) {
    use std::io::{Read, Write};
    let (mut c_read, mut s_write) = (client.try_clone().unwrap(), server.try_clone().unwrap());
    let (mut s_read, mut c_write) = (server, client);
    let down = std::thread::spawn(move || {
        let _ = std::io::copy(&mut s_read, &mut c_write);
        let _ = c_write.shutdown(std::net::Shutdown::Both);
    });
    let mut sent = 0u64;
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = match c_read.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if traffic.away() {
            break;
        }
        let n = n.min((limit - sent) as usize);
        if s_write.write_all(&buf[..n]).is_err() {
            break;
        }
        sent += n as u64;
        traffic.passed.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        if sent >= limit {
            break; // cut
        }
    }
    let _ = s_write.shutdown(std::net::Shutdown::Both);
    let _ = c_read.shutdown(std::net::Shutdown::Both);
    let _ = down.join();
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}
