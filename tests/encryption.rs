//! Confidential dumps (docs/encryption.md): dumps of the real vmcores
//! encrypted to an age X25519 key and to OpenSSH keys (a plain file, `-F`
//! into a pipe in makedumpfile mode with the recipients in the profile, a
//! split dump) hold no plaintext of the source; `vmdump decrypt` and
//! Debian's `age -d | makedumpfile -R` give the same files, page-exact
//! through libkdumpfile and drgn. Cut short (SIGTERM, SIGKILL, a full
//! disk, `-L`, a truncated copy) they decrypt to an incomplete dump of
//! whole pages; an altered byte is reported and nothing of its chunk used.

mod support;

use std::collections::HashSet;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use support::dumps::{
    all_fixtures, assert_verifies_incomplete, drgn_compare, libkdumpfile_compare, vmdump, vmdump_ok,
};
use support::synthetic::synthetic;
use support::{build_dir, temp_dir};
use vmdump_synth::SynthSpec;

/// The keys of a test: an age X25519 key, an ssh-ed25519 and an ssh-rsa key.
struct Keys {
    age: (String, PathBuf),
    ed25519: (String, PathBuf),
    rsa: (String, PathBuf),
}

fn run_ok(command: &mut Command) -> String {
    let out = command.output().unwrap_or_else(|e| panic!("{command:?}: {e} (scripts/test.sh installs it)"));
    assert!(out.status.success(), "{command:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn ssh_key(dir: &Path, kind: &str, passphrase: &str) -> (String, PathBuf) {
    let key = dir.join(format!("id_{kind}"));
    let _ = std::fs::remove_file(&key);
    run_ok(
        Command::new("ssh-keygen")
            .args(["-q", "-t", kind, "-N", passphrase, "-C", "debugger"])
            .arg("-f")
            .arg(&key),
    );
    let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
    (public.trim().to_owned(), key)
}

fn keys(dir: &Path) -> Keys {
    let key = dir.join("age.key");
    let _ = std::fs::remove_file(&key);
    run_ok(Command::new("age-keygen").arg("-o").arg(&key));
    let text = std::fs::read_to_string(&key).unwrap();
    let public =
        text.lines().find_map(|l| l.strip_prefix("# public key: ")).expect("age-keygen's public key line");
    Keys { age: (public.to_owned(), key), ed25519: ssh_key(dir, "ed25519", ""), rsa: ssh_key(dir, "rsa", "") }
}

/// `age -d -i KEY IN | makedumpfile -R OUT`: the standard tools' way.
fn standard_decrypt(input: &Path, key: &Path, out: &Path) {
    let script = "age -d -i \"$1\" \"$2\" | makedumpfile -R \"$3\" >/dev/null";
    run_ok(Command::new("sh").args(["-c", script, "sh"]).args([key, input, out]));
}

/// `vmdump decrypt -i KEY IN OUT`, which must succeed.
fn vmdump_decrypt(input: &Path, key: &Path, out: &Path) {
    vmdump_ok([
        OsStr::new("decrypt"),
        "-f".as_ref(),
        "-i".as_ref(),
        key.as_os_str(),
        input.as_os_str(),
        out.as_os_str(),
    ]);
}

/// 4 KiB pages of the vmcore: blocks of a dump of raw pages (`--compress
/// none`) from its data, those of varied bytes (a page of few byte values
/// could be anywhere by chance).
fn sample_pages(plain_dump: &[u8]) -> Vec<Vec<u8>> {
    let data = &plain_dump[plain_dump.len() / 2..];
    (0..64)
        .map(|i| &data[i * (data.len() / 64) / 4096 * 4096..][..4096])
        .filter(|page| page.iter().collect::<HashSet<_>>().len() > 96)
        .map(<[u8]>::to_vec)
        .collect()
}

/// Whether any 32-byte window of a sample page is in `haystack`.
fn holds_any(haystack: &[u8], samples: &[Vec<u8>]) -> bool {
    let needles: HashSet<&[u8]> = samples.iter().flat_map(|p| p.chunks(32).step_by(16)).collect();
    let firsts: HashSet<u64> =
        needles.iter().map(|n| u64::from_le_bytes(n[..8].try_into().unwrap())).collect();
    haystack
        .windows(32)
        .any(|w| firsts.contains(&u64::from_le_bytes(w[..8].try_into().unwrap())) && needles.contains(w))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Writes a profile with `[output] recipients`.
fn profile_with(dir: &Path, recipients: &[&str]) -> PathBuf {
    let path = dir.join("vmdump.toml");
    let list: Vec<String> = recipients.iter().map(|r| format!("{r:?}")).collect();
    std::fs::write(&path, format!("[output]\nrecipients = [{}]\n", list.join(", "))).unwrap();
    path
}

#[test]
fn encrypted_dumps_of_the_fixtures_hold_no_plaintext_and_decrypt_page_exact_with_either_key() {
    let Some(fixtures) = all_fixtures() else { return };
    let dir = temp_dir("encrypt-fixtures");
    let keys = keys(&dir);
    for fixture in fixtures {
        let elf = &fixture.elf;
        let name = fixture.name;
        // A plain file of raw pages, to the X25519 key and the ssh-ed25519 key.
        let plain = dir.join(format!("{name}.age"));
        let to = |k: &(String, PathBuf)| ["--encrypt-to".to_owned(), k.0.clone()];
        let mut args: Vec<String> =
            ["dump", "-f", "-d", "31", "--compress", "none", "--no-progress"].map(String::from).to_vec();
        args.extend(to(&keys.age).into_iter().chain(to(&keys.ed25519)));
        vmdump_ok(args.iter().map(OsStr::new).chain([elf.as_os_str(), plain.as_os_str()]));
        // makedumpfile -F -c into a pipe, the recipient (ssh-rsa) in the profile.
        let flat = dir.join(format!("{name}.flat.age"));
        let profile = profile_with(&dir, &[&keys.rsa.0]);
        let script = "\"$1\" --plugin-dir \"$2\" makedumpfile -F -c -d 31 \"$3\" | cat > \"$4\"";
        run_ok(
            Command::new("sh")
                .args(["-c", script, "sh", env!("CARGO_BIN_EXE_vmdump")])
                .args([build_dir().as_os_str(), elf.as_os_str(), flat.as_os_str()])
                .env("VMDUMP_PROFILE", &profile),
        );
        // A split dump: each piece its own encrypted stream.
        let split = dir.join(format!("{name}.split"));
        let mut args: Vec<String> =
            ["dump", "-f", "--split", "2", "-d", "31", "--compress", "zstd", "--no-progress"]
                .map(String::from)
                .to_vec();
        args.extend(to(&keys.age));
        vmdump_ok(args.iter().map(OsStr::new).chain([elf.as_os_str(), split.as_os_str()]));
        let pieces = [1, 2].map(|i| dir.join(format!("{name}.split.{i}")));

        let decrypted = dir.join(format!("{name}.plain"));
        vmdump_decrypt(&plain, &keys.age.1, &decrypted);
        let clear = std::fs::read(&decrypted).unwrap();
        let samples = sample_pages(&clear);
        assert!(samples.len() >= 16, "{name}: too few sample pages ({})", samples.len());
        assert!(
            contains(&clear, b"OSRELEASE=") && holds_any(&clear, &samples),
            "{name}: the search finds nothing"
        );
        for encrypted in [&plain, &flat, &pieces[0], &pieces[1]] {
            let bytes = std::fs::read(encrypted).unwrap();
            assert!(bytes.starts_with(b"age-encryption.org/v1\n"), "{}", encrypted.display());
            assert!(
                !contains(&bytes, b"OSRELEASE=") && !contains(&bytes, b"VMCOREINFO"),
                "{}: VMCOREINFO text",
                encrypted.display()
            );
            assert!(
                !holds_any(&bytes, &samples),
                "{}: pages of the vmcore in the clear",
                encrypted.display()
            );
        }
        for made in [&plain, &pieces[0], &pieces[1]] {
            let mode =
                std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(made).unwrap().permissions());
            assert_eq!(mode & 0o777, 0o600, "{}", made.display());
        }
        // Each key, and the standard tools, give the same file.
        let judged = [
            (&plain, &keys.age.1),
            (&plain, &keys.ed25519.1),
            (&flat, &keys.rsa.1),
            (&pieces[0], &keys.age.1),
            (&pieces[1], &keys.age.1),
        ];
        let mut outputs = Vec::new();
        for (i, (encrypted, key)) in judged.into_iter().enumerate() {
            let (ours, theirs) =
                (dir.join(format!("{name}.{i}.vmdump")), dir.join(format!("{name}.{i}.age-R")));
            vmdump_decrypt(encrypted, key, &ours);
            standard_decrypt(encrypted, key, &theirs);
            assert!(
                std::fs::read(&ours).unwrap() == std::fs::read(&theirs).unwrap(),
                "{}: vmdump decrypt and age -d | makedumpfile -R differ",
                encrypted.display()
            );
            outputs.push(ours);
        }
        assert!(
            std::fs::read(&outputs[0]).unwrap() == std::fs::read(&outputs[1]).unwrap(),
            "{name}: the two keys give different files"
        );
        let reassembled = dir.join(format!("{name}.reassembled"));
        vmdump_ok([
            OsStr::new("reassemble"),
            "-f".as_ref(),
            outputs[3].as_os_str(),
            outputs[4].as_os_str(),
            reassembled.as_os_str(),
        ]);
        for dump in [&outputs[0], &outputs[2], &reassembled] {
            let read = libkdumpfile_compare(dump, elf);
            assert!(read.different == 0 && read.equal > 0, "{name} {}: {}", dump.display(), read.raw);
        }
        let read = drgn_compare(&outputs[2], elf);
        assert!(read.different == 0 && read.equal > 0, "{name}: drgn: {}", read.raw);
        // info and verify read the encrypted file given the key.
        let info = vmdump_ok([
            OsStr::new("verify"),
            "-i".as_ref(),
            keys.ed25519.1.as_os_str(),
            "--against".as_ref(),
            elf.as_os_str(),
            plain.as_os_str(),
        ]);
        drop(info);
    }
}

#[test]
fn a_wrong_key_a_missing_key_and_a_passphrase_protected_key_are_refused_clearly() {
    let dir = temp_dir("encrypt-refusals");
    let (vmcore, _) = synthetic(&dir, SynthSpec { ram_bytes: 32 << 20, ..SynthSpec::default() });
    let keys = keys(&dir);
    let out = dir.join("out.age");
    vmdump_ok([
        OsStr::new("dump"),
        "--no-progress".as_ref(),
        "--encrypt-to".as_ref(),
        keys.age.0.as_ref(),
        vmcore.as_os_str(),
        out.as_os_str(),
    ]);
    let attempt = |key: &Path| {
        vmdump([
            OsStr::new("decrypt"),
            "-i".as_ref(),
            key.as_os_str(),
            out.as_os_str(),
            dir.join("x").as_os_str(),
        ])
    };
    let wrong = attempt(&keys.ed25519.1);
    let text = String::from_utf8_lossy(&wrong.stderr);
    assert!(
        !wrong.status.success() && text.contains("out.age") && text.contains("encrypted to other recipients"),
        "{text}"
    );
    assert!(!dir.join("x").exists(), "a failed decryption leaves no output");
    let locked = ssh_key(&dir, "ed25519", "a passphrase");
    let text = String::from_utf8_lossy(&attempt(&locked.1).stderr).into_owned();
    assert!(text.contains("passphrase"), "{text}");
    let info = vmdump([OsStr::new("info"), out.as_os_str()]);
    let text = String::from_utf8_lossy(&info.stderr);
    assert!(!info.status.success() && text.contains("encrypted") && text.contains("-i IDENTITY"), "{text}");
    let bad = vmdump([
        OsStr::new("dump"),
        "--encrypt-to".as_ref(),
        "ssh-dss AAAA".as_ref(),
        vmcore.as_os_str(),
        dir.join("y").as_os_str(),
    ]);
    let text = String::from_utf8_lossy(&bad.stderr);
    assert!(!bad.status.success() && text.contains("ssh-dss AAAA") && !dir.join("y").exists(), "{text}");
}

/// `vmdump decrypt` of `encrypted` into `out`: its exit code and stderr.
fn decrypt_status(encrypted: &Path, key: &Path, out: &Path) -> (Option<i32>, String) {
    let result = vmdump([
        OsStr::new("decrypt"),
        "-f".as_ref(),
        "-i".as_ref(),
        key.as_os_str(),
        encrypted.as_os_str(),
        out.as_os_str(),
    ]);
    (result.status.code(), String::from_utf8_lossy(&result.stderr).into_owned())
}

fn info_says_incomplete(dump: &Path) -> bool {
    let out = vmdump(["info".as_ref(), dump.as_os_str()]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .any(|l| l.starts_with("incomplete") && l.trim_end().ends_with("yes"))
}

/// Decrypts `encrypted` and judges what it holds: an incomplete dump
/// whose every page is whole and equal to `vmcore`; returns its pages.
fn assert_decrypts_incomplete(encrypted: &Path, key: &Path, vmcore: &Path, case: &str) -> u64 {
    let out = encrypted.with_extension("decrypted");
    let (code, stderr) = decrypt_status(encrypted, key, &out);
    assert!(matches!(code, Some(0 | 1)), "{case}: {stderr}");
    assert!(info_says_incomplete(&out), "{case}: vmdump info does not say incomplete ({stderr})");
    assert_verifies_incomplete(&out, vmcore, case);
    let read = libkdumpfile_compare(&out, vmcore);
    assert_eq!(read.different, 0, "{case}: {}", read.raw);
    read.equal
}

#[test]
fn encrypted_dumps_cut_short_decrypt_to_incomplete_dumps_of_whole_pages() {
    let dir = temp_dir("encrypt-cut");
    let spec = SynthSpec { ram_bytes: 384 << 20, data_percent: 70, ..SynthSpec::default() };
    let (vmcore, summary) = synthetic(&dir, spec);
    let keys = keys(&dir);
    let (recipient, key) = (&keys.age.0, &keys.age.1);
    for (i, signal) in ["TERM", "KILL"].into_iter().enumerate() {
        let out = dir.join(format!("{signal}.age"));
        let child = Command::new(env!("CARGO_BIN_EXE_vmdump"))
            .args(["--plugin-dir".as_ref(), build_dir().as_os_str()])
            .args([
                "dump",
                "--no-progress",
                "--threads",
                "1",
                "--compress",
                "zlib:9",
                "-d",
                "0",
                "--encrypt-to",
                recipient,
            ])
            .args([&vmcore, &out])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(700 + 300 * i as u64));
        assert!(
            Command::new("kill")
                .args([format!("-{signal}"), child.id().to_string()])
                .status()
                .unwrap()
                .success()
        );
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        if signal == "TERM" {
            assert!(output.status.code() == Some(1) && stderr.contains("interrupted by SIGTERM"), "{stderr}");
        }
        let pages = assert_decrypts_incomplete(&out, key, &vmcore, signal);
        assert!(pages > 0 && pages < summary.ram_pages, "{signal}: {pages} pages");
    }
    // The size limit: closed within it.
    let limited = dir.join("limited.age");
    let result = vmdump([
        OsStr::new("dump"),
        "--no-progress".as_ref(),
        "--compress".as_ref(),
        "lzo".as_ref(),
        "-L".as_ref(),
        "6M".as_ref(),
        "--encrypt-to".as_ref(),
        recipient.as_ref(),
        vmcore.as_os_str(),
        limited.as_os_str(),
    ]);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.code() == Some(1) && stderr.contains("size limit"), "{stderr}");
    assert!(std::fs::metadata(&limited).unwrap().len() <= 6 << 20);
    assert_decrypts_incomplete(&limited, key, &vmcore, "-L 6M");
    // A whole dump, then copies of it cut short and one with a byte flipped.
    let whole = dir.join("whole.age");
    vmdump_ok([
        OsStr::new("dump"),
        "--no-progress".as_ref(),
        "--compress".as_ref(),
        "lzo".as_ref(),
        "--encrypt-to".as_ref(),
        recipient.as_ref(),
        vmcore.as_os_str(),
        whole.as_os_str(),
    ]);
    let bytes = std::fs::read(&whole).unwrap();
    let mut all = 0;
    for (i, keep) in [bytes.len() / 3, bytes.len() * 2 / 3 + 5, bytes.len() - 1].into_iter().enumerate() {
        let cut = dir.join(format!("cut{i}.age"));
        std::fs::write(&cut, &bytes[..keep]).unwrap();
        let (code, stderr) = decrypt_status(&cut, key, &cut.with_extension("decrypted"));
        assert!(
            code == Some(1) && (stderr.contains("truncated") || stderr.contains("cut inside")),
            "{stderr}"
        );
        all = all.max(assert_decrypts_incomplete(&cut, key, &vmcore, &format!("cut to {keep} bytes")));
    }
    let mut altered = bytes.clone();
    altered[bytes.len() / 2] ^= 1;
    let flipped = dir.join("flipped.age");
    std::fs::write(&flipped, &altered).unwrap();
    let (code, stderr) = decrypt_status(&flipped, key, &flipped.with_extension("decrypted"));
    assert!(code == Some(1) && stderr.contains("fails authentication"), "{stderr}");
    let kept = assert_decrypts_incomplete(&flipped, key, &vmcore, "a flipped byte");
    assert!(kept < all, "the altered chunk's pages are not left out ({kept} of {all})");
}

#[test]
fn an_encrypted_dump_on_a_full_disk_is_kept_and_decrypts_to_an_incomplete_dump() {
    let dir = temp_dir("encrypt-full-disk");
    let spec = SynthSpec { ram_bytes: 128 << 20, data_percent: 70, ..SynthSpec::default() };
    let (vmcore, _) = synthetic(&dir, spec);
    let keys = keys(&dir);
    let small = dir.join("small");
    std::fs::create_dir_all(&small).unwrap();
    let mounted = Command::new("mount").args(["-t", "tmpfs", "-o", "size=6m", "tmpfs"]).arg(&small).status();
    assert!(mounted.is_ok_and(|s| s.success()), "mounting a small tmpfs needs root (CI runs as root)");
    let out = small.join("out.age");
    let result = vmdump([
        OsStr::new("dump"),
        "--no-progress".as_ref(),
        "--compress".as_ref(),
        "lzo".as_ref(),
        "--encrypt-to".as_ref(),
        keys.age.0.as_ref(),
        vmcore.as_os_str(),
        out.as_os_str(),
    ]);
    let copy = dir.join("full.age");
    let copied = std::fs::copy(&out, &copy);
    let _ = Command::new("umount").arg(&small).status();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(
        result.status.code() == Some(1) && stderr.contains("no space left") && stderr.contains("kept"),
        "{stderr}"
    );
    copied.expect("the encrypted file is kept");
    assert_decrypts_incomplete(&copy, &keys.age.1, &vmcore, "full disk");
}
