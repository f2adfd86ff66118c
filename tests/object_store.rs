//! Dumps straight into an S3-compatible store (issue 42), on real stores
//! started on 127.0.0.1: Garage, and s3s-fs, which refuses what AWS
//! refuses and Garage lets through. Each object is downloaded by curl (not
//! vmdump) and compared byte for byte with the local file of the same call,
//! then read page by page through libkdumpfile and drgn.

mod support;

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use support::dumps::{Fixture, all_fixtures, drgn_compare, libkdumpfile_compare, vmdump_ok};
use support::store::{FaultProxy, Faults, Kind, Store};
use support::temp_dir;

/// `vmdump dump OPTIONS ELF s3://dumps/KEY` and the same to a local file;
/// the object (downloaded by curl) equals the file. Returns the file.
fn dump_both(
    store: &Store,
    fixture: &Fixture,
    options: &[&str],
    key: &str,
    dir: &Path,
) -> std::path::PathBuf {
    let local = dir.join(key.replace('/', "_"));
    let url = store.url(key);
    let args = |out: &str| -> Vec<String> {
        let mut args: Vec<String> =
            ["dump", "--no-progress"].iter().chain(options).map(|s| s.to_string()).collect();
        args.extend([fixture.elf.to_str().unwrap().to_string(), out.to_string()]);
        args
    };
    let out = store.vmdump(args(&url));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}: dump to {url}: {stderr}", fixture.name);
    assert!(stderr.contains(&format!("Object store    : {url}: ")), "{stderr}");
    vmdump_ok(args(local.to_str().unwrap()));
    let object = dir.join(format!("{}.object", key.replace('/', "_")));
    assert!(store.download(key, &object), "{url} was not downloaded");
    let (a, b) = (std::fs::read(&object).unwrap(), std::fs::read(&local).unwrap());
    assert!(
        a == b,
        "{}: {url} ({} bytes) differs from the local file ({} bytes)",
        fixture.name,
        a.len(),
        b.len()
    );
    object
}

/// Runs `test` on each single-node store (Garage, then s3s-fs, which
/// refuses what AWS refuses), with a folder of its own, on the fixtures.
fn in_each_store(name: &str, test: impl Fn(&Store, &Path, &[Fixture])) {
    let Some(fixtures) = all_fixtures() else { return };
    for kind in Kind::SINGLE {
        let store = Store::start(kind, name);
        let dir = temp_dir(&format!("object-{name}-{kind:?}"));
        test(&store, &dir, &fixtures);
    }
}

/// Every multipart upload was completed or aborted (where the store lists them).
fn assert_no_open_upload(store: &Store) {
    if let Some(open) = store.open_uploads() {
        assert!(open.is_empty(), "{:?}: uploads left open: {open:?}", store.kind);
    }
}

/// A profile with `[output]` lines.
fn profile(dir: &Path, output: &str) -> std::path::PathBuf {
    let path = dir.join("profile.toml");
    std::fs::write(&path, format!("[output]\n{output}\n")).unwrap();
    path
}

#[test]
fn fixtures_in_each_store_are_their_local_files_page_exact_with_the_diagnosis_beside() {
    in_each_store("fixtures", |store, dir, fixtures| {
        for fixture in fixtures {
            let key = format!("{}/vmcore", fixture.name);
            let object = dump_both(store, fixture, &["-d", "31", "--compress", "zlib"], &key, dir);
            let pages = libkdumpfile_compare(&object, &fixture.elf);
            assert!(pages.different == 0 && pages.equal > 0, "{}: libkdumpfile: {}", fixture.name, pages.raw);
            let drgn = drgn_compare(&object, &fixture.elf);
            assert_eq!(
                (drgn.equal, drgn.different),
                (pages.equal, 0),
                "{}: drgn: {}",
                fixture.name,
                drgn.raw
            );
            // The diagnosis, put before the dump, with searchable metadata.
            let triage = dir.join("triage.json");
            assert!(
                store.download(&format!("{key}.triage.json"), &triage),
                "{}: no triage object",
                fixture.name
            );
            let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&triage).unwrap()).unwrap();
            let release = json["release"].as_str().expect("a release");
            let head = store.head(&format!("{key}.triage.json")).unwrap();
            assert!(
                head.contains(&format!("x-amz-meta-vmdump-release: {}", release.to_ascii_lowercase())),
                "{head}"
            );
            let log = dir.join("dmesg.txt");
            assert!(
                store.download(&format!("{key}.dmesg.txt"), &log),
                "{}: no kernel log object",
                fixture.name
            );
            let local_log = store.vmdump([OsStr::new("dmesg"), fixture.elf.as_os_str()]).stdout;
            assert!(std::fs::read(&log).unwrap() == local_log, "{}: the log object differs", fixture.name);
            eprintln!(
                "{}: {key}: identical to the local file, {} pages equal through libkdumpfile and drgn",
                fixture.name, pages.equal
            );
        }
        assert_no_open_upload(store);
    });
}

#[test]
fn the_strict_store_accepts_every_upload_of_parts_of_five_mib_plain_or_encrypted() {
    let Some(fixtures) = all_fixtures() else { return };
    let store = Store::start(Kind::S3sFs, "strict");
    let dir = temp_dir("object-strict");
    let profile = profile(&dir, "part_mib = 5");
    let profile = profile.to_str().unwrap();
    let fixture = &fixtures[1];
    for (level, codec) in [("31", "zlib"), ("1", "zstd"), ("31", "none")] {
        let key = format!("strict/{}-d{level}-{codec}", fixture.name);
        let object =
            dump_both(&store, fixture, &["--profile", profile, "-d", level, "--compress", codec], &key, &dir);
        let size = std::fs::metadata(&object).unwrap().len();
        assert!(size > 2 * (5 << 20), "{key}: {size} bytes is too few parts to test the rules");
        let pages = libkdumpfile_compare(&object, &fixture.elf);
        assert!(pages.different == 0 && pages.equal > 0, "{key}: {}", pages.raw);
        eprintln!("{key}: {size} bytes in parts of 5 MiB, accepted by s3s-fs, {} pages equal", pages.equal);
    }
    // With a recipient: the age encryption of the flattened stream, as a
    // file gets it, in parts of 5 MiB. curl's copy, decrypted by age and
    // rearranged by makedumpfile -R, is the plain dump of the same options.
    let identity = dir.join("age.key");
    let _ = std::fs::remove_file(&identity);
    let keygen = std::process::Command::new("age-keygen").arg("-o").arg(&identity).output().unwrap();
    assert!(keygen.status.success(), "age-keygen: {}", String::from_utf8_lossy(&keygen.stderr));
    let text = std::fs::read_to_string(&identity).unwrap();
    let recipient = text.lines().find_map(|l| l.strip_prefix("# public key: ")).expect("a public key");
    let key = "strict/encrypted";
    let options = ["--profile", profile, "-d", "1", "--compress", "zstd", "--encrypt-to", recipient];
    let out = store.vmdump(
        [&["dump", "--no-progress"][..], &options, &[fixture.elf.to_str().unwrap(), &store.url(key)]]
            .concat(),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let encrypted = dir.join("encrypted.age");
    assert!(store.download(key, &encrypted), "{key} was not downloaded");
    let size = std::fs::metadata(&encrypted).unwrap().len();
    assert!(size > 2 * (5 << 20), "{key}: {size} bytes is too few parts to test the rules");
    let plain = dir.join("decrypted");
    let _ = std::fs::remove_file(&plain);
    let script = "age -d -i \"$1\" \"$2\" | makedumpfile -R \"$3\" >/dev/null";
    let decrypted = std::process::Command::new("sh")
        .args(["-c", script, "sh"])
        .args([&identity, &encrypted, &plain])
        .output()
        .unwrap();
    assert!(
        decrypted.status.success(),
        "age -d | makedumpfile -R: {}",
        String::from_utf8_lossy(&decrypted.stderr)
    );
    let unencrypted = dir.join(format!("strict_{}-d1-zstd", fixture.name));
    assert!(
        std::fs::read(&plain).unwrap() == std::fs::read(&unencrypted).unwrap(),
        "{key}: decrypted, it differs from the plain dump"
    );
    eprintln!("{key}: {size} bytes of age in parts of 5 MiB, accepted by s3s-fs; decrypted, the plain dump");
}

#[test]
fn the_secret_key_is_in_no_object_no_output_and_no_file_others_can_read() {
    in_each_store("secret", |store, dir, fixtures| {
        let fixture = &fixtures[0];
        let url = store.url("secret/vmcore");
        let out = store.vmdump(["dump", "-d", "31", fixture.elf.to_str().unwrap(), &url]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let secret = store.secret().as_bytes();
        let contains = |hay: &[u8]| hay.windows(secret.len()).any(|w| w == secret);
        assert!(!contains(&out.stdout) && !contains(&out.stderr), "the key is in vmdump's output");
        for key in store.keys("secret/") {
            let path = dir.join("object");
            assert!(store.download(&key, &path));
            assert!(!contains(&std::fs::read(&path).unwrap()), "the key is in object {key}");
        }
        // A refused request (an access key id the store does not know, with
        // the real secret) names the endpoint and the request, not the key.
        let out = store
            .command(store.var("AWS_ENDPOINT_URL"))
            .env("AWS_ACCESS_KEY_ID", "GK0123456789abcdef01234567")
            .args(["dump", "-d", "31", fixture.elf.to_str().unwrap(), &store.url("secret/refused")])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success()
                && stderr.contains(store.var("AWS_ENDPOINT_URL"))
                && stderr.contains("secret/refused"),
            "{stderr}"
        );
        assert!(!contains(&out.stderr), "the key is in the error");
        // The store's files: its log holds no key, and the files that do are its owner's only.
        for file in store.files() {
            let mode = std::fs::metadata(&file).unwrap().permissions().mode();
            let bytes = std::fs::read(&file).unwrap_or_default();
            if contains(&bytes) {
                assert_eq!(mode & 0o077, 0, "{} holds the key and others may read it", file.display());
            }
        }
        let log = std::fs::read(store.dir.join("node/server.log")).unwrap();
        assert!(!contains(&log), "the store's log holds the key");
    });
}

/// The share of the object a command read, from its report line.
fn share_read(stderr: &str, url: &str) -> f64 {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("vmdump: read ") && l.contains(url))
        .unwrap_or_else(|| panic!("no read report: {stderr}"));
    let at = line.find(" (").expect("a share") + 2;
    line[at..].split(' ').next().unwrap().parse().expect("a percentage")
}

#[test]
fn info_triage_dmesg_and_verify_read_an_object_by_ranges_as_they_read_the_file() {
    in_each_store("reads", |store, dir, fixtures| {
        for fixture in fixtures {
            let key = format!("reads/{}", fixture.name);
            let object = dump_both(store, fixture, &["-d", "1", "--compress", "zstd"], &key, dir);
            let url = store.url(&key);
            let size = std::fs::metadata(&object).unwrap().len();
            for command in [&["info"][..], &["triage", "--json"], &["dmesg"], &["verify"]] {
                let run = |input: &str| store.vmdump([command, &[input]].concat());
                let (remote, local) = (run(&url), run(object.to_str().unwrap()));
                assert!(
                    remote.status.success(),
                    "{command:?} {url}: {}",
                    String::from_utf8_lossy(&remote.stderr)
                );
                // Every line alike, but the zero pages info counts only in a file.
                let same = |out: &[u8], path: &str| {
                    let text = String::from_utf8_lossy(out).replace(path, "DUMP");
                    text.lines().filter(|l| !l.starts_with("zero pages")).collect::<Vec<_>>().join("\n")
                };
                assert_eq!(
                    same(&remote.stdout, &url),
                    same(&local.stdout, object.to_str().unwrap()),
                    "{command:?} {url}"
                );
                let share = share_read(&String::from_utf8_lossy(&remote.stderr), &url);
                eprintln!("{}: {} of a {size}-byte object read {share} % of it", fixture.name, command[0]);
                match command[0] {
                    // A triage reads kallsyms, the log and the stack (the
                    // modules' symbols and the BTF only for a module's frame).
                    "info" | "triage" => assert!(share < 5.0, "{command:?} read {share} % of {url}"),
                    // Each stored byte, once.
                    "verify" => assert!((99.99..=100.01).contains(&share), "verify read {share} % of {url}"),
                    _ => {}
                }
            }
            let copy = dir.join("fetched");
            let _ = std::fs::remove_file(&copy);
            let out = store.vmdump(["fetch", &url, copy.to_str().unwrap()]);
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            assert!(std::fs::read(&copy).unwrap() == std::fs::read(&object).unwrap(), "vmdump fetch {url}");
            assert_eq!(std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777, 0o600);
        }
    });
}

#[test]
fn list_groups_the_dumps_of_one_crash_and_tells_kernels_apart() {
    in_each_store("list", |store, _dir, fixtures| {
        for (fixture, host) in fixtures.iter().flat_map(|f| [(f, "a"), (f, "b")]) {
            let url = store.url(&format!("fleet/{host}/{}", fixture.name));
            let out =
                store.vmdump(["dump", "-d", "31", "--no-progress", fixture.elf.to_str().unwrap(), &url]);
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        }
        let out = store.vmdump(["list", "--json", &store.url("fleet/")]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let groups: serde_json::Value = serde_json::from_slice(&out.stdout).expect("list --json parses");
        let groups = groups.as_array().expect("an array of groups");
        let dumps: Vec<&serde_json::Value> =
            groups.iter().flat_map(|g| g["dumps"].as_array().unwrap()).collect();
        assert_eq!(dumps.len(), 2 * fixtures.len(), "{groups:?}");
        let signatures: std::collections::BTreeSet<&str> =
            groups.iter().map(|g| g["signature"].as_str().unwrap()).collect();
        assert_eq!(signatures.len(), groups.len(), "two groups of one signature: {groups:?}");
        for fixture in fixtures {
            // Both dumps of one vmcore are in one group, with no dump of another kernel.
            let group = groups
                .iter()
                .find(|g| {
                    g["dumps"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|d| d["object"].as_str().unwrap().ends_with(fixture.name))
                })
                .unwrap();
            let members: Vec<&str> =
                group["dumps"].as_array().unwrap().iter().map(|d| d["object"].as_str().unwrap()).collect();
            assert!(
                members.iter().filter(|o| o.ends_with(fixture.name)).count() == 2,
                "{}: {members:?}",
                fixture.name
            );
            // Grouped by signature (the innermost frames, whatever the
            // kernel: one crash on several releases is one group).
            let signature = |d: &serde_json::Value| {
                let frames: Vec<&str> =
                    d["top_frames"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
                if frames.is_empty() { None } else { Some(frames.join(" < ")) }
            };
            assert!(
                group["dumps"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|d| signature(d).is_none_or(|s| s == group["signature"])),
                "a group holds dumps of other signatures: {group}"
            );
            assert!(
                group["dumps"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|d| d["complete"] == true && d["size"].as_u64() > Some(0)),
                "{group}"
            );
        }
        let text = store.vmdump(["list", &store.url("fleet/")]);
        let text = String::from_utf8_lossy(&text.stdout);
        assert!(text.contains("(2 dumps)") && text.contains("complete"), "{text}");
        eprintln!("{text}");
    });
}

/// The retries the report counts: `Object store    : URL: N requests, R retried, ...`.
fn retries(stderr: &str) -> u64 {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("Object store"))
        .unwrap_or_else(|| panic!("no store line: {stderr}"));
    let (_, rest) = line.split_once(" requests, ").expect("requests");
    rest.split(' ').next().unwrap().parse().expect("a count")
}

#[test]
fn through_a_faulty_proxy_the_dump_completes_page_exact_and_counts_its_retries() {
    in_each_store("faults", |store, dir, fixtures| {
        let fixture = &fixtures[1];
        // Delays shorter than the timeout: a request that times out while the
        // proxy still holds its bytes reaches the store after its retry, and
        // Garage then takes that late, cut copy for the part (InvalidPart at
        // the completion; docs/object-storage.md, "Not yet").
        let profile = profile(dir, "part_mib = 5\nrequest_timeout_seconds = 5\nretry_seconds = 60");
        let local = dir.join("local");
        let options = [
            "dump",
            "--no-progress",
            "--profile",
            profile.to_str().unwrap(),
            "-d",
            "1",
            "--compress",
            "zstd",
        ];
        vmdump_ok([&options[..], &[fixture.elf.to_str().unwrap(), local.to_str().unwrap()]].concat());
        for seed in [1, 2, 3] {
            let faults = Faults {
                seed,
                delayed: 10,
                reset: 10,
                cut: 10,
                delay: std::time::Duration::from_secs(2),
                outage_after: None,
                outage: Default::default(),
            };
            let proxy = FaultProxy::start(store.var("AWS_ENDPOINT_URL"), faults);
            let key = format!("faults/{seed}");
            let out = store
                .command(&proxy.endpoint)
                .args(options.iter().chain(&[fixture.elf.to_str().unwrap(), store.url(&key).as_str()]))
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "seed {seed}: {stderr}");
            let object = dir.join("object");
            assert!(store.download(&key, &object));
            assert!(
                std::fs::read(&object).unwrap() == std::fs::read(&local).unwrap(),
                "seed {seed}: the object differs from the file"
            );
            let tally = *proxy.tally.lock().unwrap();
            assert!(
                retries(&stderr) > 0 && tally[1] + tally[2] + tally[3] > 0,
                "seed {seed}: no fault met: {tally:?}\n{stderr}"
            );
            eprintln!(
                "seed {seed}: connections passed/delayed/reset/cut {tally:?}, {} retries in the report: identical to the file",
                retries(&stderr)
            );
        }
        let pages = libkdumpfile_compare(&local, &fixture.elf);
        assert!(pages.different == 0, "{}", pages.raw);
        assert_no_open_upload(store);
    });
}

#[test]
fn a_store_away_within_the_budget_is_waited_for_and_beyond_it_the_dump_falls_back() {
    in_each_store("outage", |store, dir, fixtures| {
        let fixture = &fixtures[1];
        let local = dir.join("local");
        // A profile of [output] alone: the same codec settings as the runs' profiles.
        let plain = profile(dir, "");
        let options =
            ["dump", "--no-progress", "--profile", plain.to_str().unwrap(), "-d", "1", "--compress", "zstd"];
        vmdump_ok([&options[..], &[fixture.elf.to_str().unwrap(), local.to_str().unwrap()]].concat());
        let run = |key: &str, outage: u64, output: &str| {
            let faults = Faults {
                seed: 7,
                delayed: 0,
                reset: 0,
                cut: 0,
                delay: Default::default(),
                outage_after: Some(20 << 20),
                outage: std::time::Duration::from_secs(outage),
            };
            let proxy = FaultProxy::start(store.var("AWS_ENDPOINT_URL"), faults);
            let started = std::time::Instant::now();
            let out = store
                .command(&proxy.endpoint)
                .args([
                    "dump",
                    "--no-progress",
                    "--profile",
                    profile(dir, output).to_str().unwrap(),
                    "-d",
                    "1",
                    "--compress",
                    "zstd",
                ])
                .args([fixture.elf.to_str().unwrap(), &store.url(key)])
                .output()
                .unwrap();
            (out, started.elapsed().as_secs_f64())
        };
        // Away for 8 s, with 30 s of retries: the dump waits and completes.
        let (out, _) = run("outage/back", 8, "part_mib = 5\nretry_seconds = 30\nrequest_timeout_seconds = 5");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && retries(&stderr) > 0, "{stderr}");
        let object = dir.join("object");
        assert!(store.download("outage/back", &object));
        assert!(
            std::fs::read(&object).unwrap() == std::fs::read(&local).unwrap(),
            "the object differs from the file"
        );
        // Away for longer than 6 s of retries: the local fallback, identical to the file.
        let fallback = dir.join("fallback");
        std::fs::create_dir_all(&fallback).unwrap();
        let settings = format!(
            "part_mib = 5\nretry_seconds = 6\nrequest_timeout_seconds = 3\nfallback = \"{}\"",
            fallback.display()
        );
        let (out, seconds) = run("outage/gone", 600, &settings);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(stderr.contains("writing the dump to the fallback"), "{stderr}");
        let saved = fallback.join("outage_gone");
        assert!(
            std::fs::read(&saved).unwrap() == std::fs::read(&local).unwrap(),
            "the fallback differs from the file"
        );
        assert_eq!(std::fs::metadata(&saved).unwrap().permissions().mode() & 0o777, 0o600);
        // The diagnosis went up before the first page.
        assert!(
            store.head("outage/gone.triage.json").is_some() && store.head("outage/gone.dmesg.txt").is_some()
        );
        // Without a fallback: a clear error naming the endpoint, within the budget and its timeouts.
        let (out, seconds_error) =
            run("outage/error", 600, "part_mib = 5\nretry_seconds = 6\nrequest_timeout_seconds = 3");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains("no answer after")
                && stderr.contains("127.0.0.1")
                && stderr.contains("outage/error"),
            "{stderr}"
        );
        // The budget, one attempt's timeout, the cleanup's 10 s (docs/object-storage.md), and the dump itself.
        assert!(seconds_error < 6.0 + 3.0 + 10.0 + 5.0, "{seconds_error} s");
        eprintln!(
            "store back within the budget: completed; gone: fallback after {seconds:.1} s, error after {seconds_error:.1} s"
        );
    });
}

/// Sends `signal` to the store processes `pids`.
fn signal(signal: &str, pids: &[String]) {
    assert!(
        std::process::Command::new("kill").arg(signal).args(pids).status().unwrap().success(),
        "kill {signal} {pids:?}"
    );
}

#[test]
fn a_three_node_cluster_that_loses_a_node_or_stops_whole_gets_the_dump_or_its_fallback() {
    let Some(fixtures) = all_fixtures() else { return };
    let store = Store::start(Kind::GarageCluster, "cluster");
    let dir = temp_dir("object-cluster");
    let fixture = &fixtures[1];
    let patient = profile(&dir, "part_mib = 5\nrequest_timeout_seconds = 4\nretry_seconds = 60");
    let options = [
        "dump",
        "--no-progress",
        "--profile",
        patient.to_str().unwrap(),
        "-d",
        "1",
        "--compress",
        "zstd",
        "--threads",
        "1",
    ];
    let local = dir.join("local");
    let started = std::time::Instant::now();
    vmdump_ok([&options[..], &[fixture.elf.to_str().unwrap(), local.to_str().unwrap()]].concat());
    let dump_seconds = started.elapsed().as_secs_f64();
    // fault: what happens to the nodes once the dump is under way.
    let run = |key: &str, options: &[&str], fault: &dyn Fn()| {
        let mut child = store
            .command(store.var("AWS_ENDPOINT_URL"))
            .args(options)
            .args([fixture.elf.to_str().unwrap(), &store.url(key)])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1500));
        assert!(child.try_wait().unwrap().is_none(), "{key}: the dump ended before the fault");
        let started = std::time::Instant::now();
        fault();
        let out = child.wait_with_output().unwrap();
        (out, started.elapsed().as_secs_f64())
    };
    let completes = |key: &str, fault: &dyn Fn()| {
        let (out, _) = run(key, &options, fault);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{key}: {stderr}");
        let object = dir.join("object");
        assert!(store.download(key, &object), "{key} is not there");
        assert!(
            std::fs::read(&object).unwrap() == std::fs::read(&local).unwrap(),
            "{key}: the object differs from the file"
        );
        stderr
    };
    // Node 3 killed: node 1 and 2 are a quorum of the three replicas.
    completes("cluster/node-down", &|| signal("-KILL", &store.pids[2..]));
    // Every node stopped, started again 10 s later (within 60 s of retries).
    let stderr = completes("cluster/all-stopped", &|| {
        signal("-STOP", &store.pids[..2]);
        std::thread::sleep(std::time::Duration::from_secs(10));
        signal("-CONT", &store.pids[..2]);
    });
    assert!(retries(&stderr) > 0, "no retry while the nodes were stopped: {stderr}");
    // Every node stopped and not started again: with 6 s of retries, the
    // local fallback, identical to the file.
    let fallback = dir.join("fallback");
    std::fs::create_dir_all(&fallback).unwrap();
    let gone = profile(
        &fallback,
        &format!(
            "part_mib = 5\nrequest_timeout_seconds = 3\nretry_seconds = 6\nfallback = \"{}\"",
            fallback.display()
        ),
    );
    let mut gone_options = options;
    gone_options[3] = gone.to_str().unwrap();
    let (out, seconds) = run("cluster/gone", &gone_options, &|| signal("-STOP", &store.pids[..2]));
    signal("-CONT", &store.pids[..2]);
    let gone_stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && gone_stderr.contains("writing the dump to the fallback"),
        "{gone_stderr}"
    );
    assert!(
        std::fs::read(fallback.join("cluster_gone")).unwrap() == std::fs::read(&local).unwrap(),
        "the fallback differs from the file"
    );
    // The budget, one request's timeout, the cleanup's 10 s
    // (docs/object-storage.md), and the fallback's dump (a local dump's time).
    assert!(
        seconds < 6.0 + 3.0 + 10.0 + 1.5 * dump_seconds + 1.0,
        "the fallback was written {seconds} s after the nodes stopped (a dump takes {dump_seconds} s)"
    );
    assert!(store.head("cluster/gone.triage.json").is_some(), "the triage object went up before the pages");
    let pages = libkdumpfile_compare(&local, &fixture.elf);
    assert!(pages.different == 0, "{}", pages.raw);
    eprintln!(
        "three nodes: one killed, then all stopped for 10 s: both dumps identical to the file ({} retries); \
         all stopped for good: the fallback {seconds:.1} s later",
        retries(&stderr)
    );
}

#[test]
fn a_signal_mid_upload_leaves_an_object_flagged_incomplete_with_whole_pages() {
    in_each_store("signal", |store, dir, fixtures| {
        let fixture = &fixtures[2];
        let url = store.url("signal/vmcore");
        let mut child = store
            .command(store.var("AWS_ENDPOINT_URL"))
            .args(["dump", "-d", "1", "--compress", "zstd", "--threads", "1"])
            .args([fixture.elf.to_str().unwrap(), &url])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The signal once the progress says the pages are being copied.
        use std::io::BufRead;
        let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let mut stderr = String::new();
        for line in lines.by_ref() {
            let line = line.unwrap();
            stderr += &line;
            stderr.push('\n');
            if line.contains("Copying data: ") {
                break;
            }
        }
        signal("-INT", &[child.id().to_string()]);
        stderr.extend(lines.map(|l| l.unwrap() + "\n"));
        let out = child.wait_with_output().unwrap();
        // As a file: exit 1, and the dump kept, flagged incomplete.
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("the dump is incomplete (interrupted by SIGINT)"), "{stderr}");
        let info = store.vmdump(["info", &url]);
        let text = String::from_utf8_lossy(&info.stdout);
        assert!(info.status.success() && text.contains("incomplete       : yes"), "{text}");
        let object = dir.join("object");
        assert!(store.download("signal/vmcore", &object));
        let pages = libkdumpfile_compare(&object, &fixture.elf);
        assert!(pages.different == 0 && pages.equal > 0, "{}", pages.raw);
        assert_no_open_upload(store);
        eprintln!("{:?}: SIGINT mid-upload: an incomplete object of {} whole pages", store.kind, pages.equal);
    });
}
